-- Which node holds each MCP session (issue 23): the Streamable HTTP transport keeps a
-- session in the memory of the node that initialized it, so any other node that receives a
-- request with its Mcp-Session-Id forwards the request there. Written when the session
-- opens, removed when it is closed by DELETE; rows of a dead node's sessions lead nowhere
-- (the node is not live) and go with the node's row.
CREATE TABLE mcp_sessions (
  id text PRIMARY KEY,
  node_id text NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mcp_sessions_node ON mcp_sessions (node_id);
