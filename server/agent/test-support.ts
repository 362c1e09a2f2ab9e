// Reading a recorded request to the model the way a scripted conversation needs to: the
// latest observation it was sent, and the ref of an element in its snapshot; and replaying
// a recorded conversation against it.
import type { ScriptedReply } from '../llm/scripted-server.js';

/** The text of the last user turn (the latest observation), in either protocol. */
export function lastObservation(body: any): string {
  const users = (body.messages as any[]).filter((m) => m.role === 'user');
  const content = users.at(-1)?.content;
  if (typeof content === 'string') return content;
  return (content as any[])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
}

/** Whether the last user turn carried an image, in either protocol. */
export function lastHasImage(body: any): boolean {
  const users = (body.messages as any[]).filter((m) => m.role === 'user');
  const content = users.at(-1)?.content;
  return Array.isArray(content) && content.some((c: any) => c.type === 'image' || c.type === 'image_url');
}

/** The ref of the element of this role and name in a snapshot; throws when it is not there. */
export function refOf(observation: string, role: string, name: string): string {
  const line = observation.split('\n').find((l) => l.includes(`${role} "${name}"`) && /\[ref=\w+\]/.test(l));
  if (!line) throw new Error(`no ${role} "${name}" with a ref in:\n${observation}`);
  return /\[ref=(\w+)\]/.exec(line)![1];
}

/** The text of the tool results the model was sent in its last request (outcomes of the previous turn). */
export function lastToolResults(body: any): string[] {
  const out: string[] = [];
  for (const m of body.messages as any[]) {
    if (m.role === 'tool') out.push(m.content);
    if (m.role === 'user' && Array.isArray(m.content)) for (const c of m.content) if (c.type === 'tool_result') out.push(c.content);
  }
  return out;
}

/** A model conversation recorded as a fixture (fixtures/agent/*.json): the task and the model's replies. */
export interface Recording {
  task: { prompt: string; path: string; output_schema?: Record<string, unknown> };
  replies: { text?: string; tool_calls?: { name: string; arguments: Record<string, unknown> | string }[] }[];
}

/**
 * The replies of a recording, as a scripted model server's script: each {{ref:ROLE "NAME"}}
 * (quotes escaped or not) becomes that element's ref in the latest snapshot the model was sent.
 */
export function replay(recording: Recording): ((body: any) => ScriptedReply)[] {
  return recording.replies.map((r) => (body: any) => {
    const seen = lastObservation(body);
    const refs = (s: string) => s.replace(/\{\{ref:(\w+) \\?"(.*?)\\?"\}\}/g, (_, role: string, name: string) => refOf(seen, role, name));
    return {
      ...(r.text !== undefined ? { text: refs(r.text) } : {}),
      ...(r.tool_calls
        ? {
            toolCalls: r.tool_calls.map((c) => ({
              name: c.name,
              arguments: typeof c.arguments === 'string' ? refs(c.arguments) : (JSON.parse(refs(JSON.stringify(c.arguments))) as Record<string, unknown>),
            })),
          }
        : {}),
    };
  });
}
