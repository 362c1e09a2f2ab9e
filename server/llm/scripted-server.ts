// A local model server for tests and the benchmark: it speaks the OpenAI Chat Completions
// and Anthropic Messages protocols, answers each request with the next reply of its script
// (a recorded conversation), and keeps every request it was sent, so a test asserts what
// the model saw (snapshots, refs, images) as the real provider would have received it.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedReply {
  text?: string;
  /** Arguments as a string go on the wire as they are (a malformed call of a small model). */
  toolCalls?: { name: string; arguments: Record<string, unknown> | string }[];
  /** Answer this HTTP status with an error body instead. */
  status?: number;
  /** Wait this long before answering (the model's "thinking"). */
  delayMs?: number;
}

/** A reply, or a function of the request body (and its index) giving one. */
export type ScriptStep = ScriptedReply | ((body: any, index: number) => ScriptedReply);

export interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
}

export interface ScriptedModelServer {
  /** The LLM_BASE_URL for openai (…/v1) or anthropic (the origin). */
  baseUrl(provider: 'openai' | 'anthropic'): string;
  readonly received: Received[];
  /** Replaces the script; the next request gets its first reply. */
  script(steps: ScriptStep[]): void;
  /** Milliseconds spent answering (delays included), per request. */
  readonly answerMs: number[];
  /** What script functions threw (their expectations about the request), by reply. */
  readonly errors: string[];
  close(): Promise<void>;
}

export async function startScriptedModel(steps: ScriptStep[] = []): Promise<ScriptedModelServer> {
  let script = steps;
  let next = 0;
  const received: Received[] = [];
  const answerMs: number[] = [];
  const errors: string[] = [];
  let calls = 0;
  const server: Server = createServer(async (req, res) => {
    const started = performance.now();
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: any;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'body is not JSON' } }));
      return;
    }
    const path = req.url ?? '';
    received.push({ path, headers: req.headers, body });
    const step = script[next++];
    let reply: ScriptedReply;
    try {
      reply = step === undefined ? { status: 500 } : typeof step === 'function' ? step(body, next - 1) : step;
    } catch (err) {
      // A script's expectation about what the model was sent failed: the test reads errors.
      errors.push(`reply ${next - 1}: ${(err as Error).message}`);
      reply = { status: 500 };
    }
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
    const send = (status: number, payload: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
      answerMs.push(performance.now() - started);
    };
    if (reply.status)
      return send(reply.status, { error: { message: step === undefined ? 'the script has no more replies' : `scripted error ${reply.status}` } });
    const id = () => `call_${++calls}`;
    if (path.endsWith('/chat/completions')) {
      send(200, {
        id: `chatcmpl-${calls}`,
        object: 'chat.completion',
        model: body.model,
        choices: [
          {
            index: 0,
            finish_reason: reply.toolCalls?.length ? 'tool_calls' : 'stop',
            message: {
              role: 'assistant',
              content: reply.text ?? null,
              ...(reply.toolCalls?.length
                ? {
                    tool_calls: reply.toolCalls.map((c) => ({
                      id: id(),
                      type: 'function',
                      function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
                    })),
                  }
                : {}),
            },
          },
        ],
        usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
      });
    } else if (path.endsWith('/v1/messages')) {
      send(200, {
        id: `msg_${calls}`,
        type: 'message',
        role: 'assistant',
        model: body.model,
        stop_reason: reply.toolCalls?.length ? 'tool_use' : 'end_turn',
        content: [
          ...(reply.text ? [{ type: 'text', text: reply.text }] : []),
          ...(reply.toolCalls ?? []).map((c) => ({ type: 'tool_use', id: id(), name: c.name, input: c.arguments })),
        ],
        usage: { input_tokens: 100, output_tokens: 10 },
      });
    } else {
      send(404, { error: { message: `no such path ${path}` } });
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl: (provider) => (provider === 'openai' ? `${origin}/v1` : origin),
    received,
    answerMs,
    errors,
    script(steps) {
      script = steps;
      next = 0;
      errors.length = 0;
    },
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
