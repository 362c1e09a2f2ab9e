// The bootstrap that runs INSIDE the sandbox, before and around the user's code. It is
// bundled once by the server (esbuild) into one CommonJS file; playwright-core stays
// external and is resolved from the read-only bind at /run/node_modules.
//
// It is started ahead of its run (a warm child): it loads Playwright (the bulk of a cold
// start, some 300 ms to 1 s) and starts the in-sandbox end of the CDP relay (the network namespace has only its own
// loopback: 127.0.0.1:<port> here is forwarded to the Unix socket the server listens on),
// connects Playwright over CDP, hands the user's default export a context, and reports
// logs, artifacts and the result as JSON lines on fd 3. The run's settings arrive as one
// JSON line on stdin once the server has a run for it; stdin stays open for the answers to
// ctx.requestIntervention (a person asked through the server), one JSON line each.
import { writeSync } from 'node:fs';
import { createServer, connect, type AddressInfo } from 'node:net';
import { format } from 'node:util';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import {
  INSIDE,
  interventionProblem,
  NO_INTERVENTIONS,
  type ChildConfig,
  type ChildConnect,
  type ChildMessage,
  type InterventionAsk,
  type LogLevel,
  type ServerMessage,
} from '../protocol.js';
import { rehearse } from './rehearsal.js';

let config: ChildConfig;

/** All of `bytes` to `fd`, blocking: keeps the order of what is written and gets it out before exit. */
function writeAll(fd: number, bytes: Buffer): void {
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += writeSync(fd, bytes, offset);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
    }
  }
}

function send(message: ChildMessage): void {
  writeAll(3, Buffer.from(`${JSON.stringify(message)}\n`));
}

let finished = false;
function finish(message: ChildMessage): never {
  if (!finished) {
    finished = true;
    // Pipes are written synchronously on Linux: what the code wrote is ahead of the marks.
    if (config) for (const fd of [1, 2]) writeAll(fd, Buffer.from(config.endMark));
    send(message);
  }
  process.exit(0);
}

/** The line in the user's own source of the first stack frame in their code. */
function userLine(err: unknown): number | undefined {
  const stack = err instanceof Error ? String(err.stack ?? '') : '';
  const match = /\/run\/sbx\/code\/user\.(?:ts|mjs):(\d+):\d+/.exec(stack);
  if (!match) return undefined;
  const line = Number(match[1]) - config.lineOffset;
  return line >= 1 ? line : undefined;
}

function describe(err: unknown): { message: string; rootCause?: string } {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? err.cause.message : err.cause === undefined ? undefined : String(err.cause);
    const rootCause = [err.name !== 'Error' ? err.name : undefined, cause].filter(Boolean).join(': ') || undefined;
    return { message: err.message || err.name, ...(rootCause ? { rootCause } : {}) };
  }
  return { message: typeof err === 'string' ? err : format('%o', err) };
}

function userFailure(err: unknown): never {
  const line = userLine(err);
  finish({ t: 'error', type: 'automation_failure', ...describe(err), ...(line ? { line } : {}) });
}

// A rejection or exception that escapes a promise chain: the bootstrap's own until user
// code is loaded, the user's after.
let userPhase = false;
function escaped(err: unknown): never {
  if (userPhase) userFailure(err);
  finish({ t: 'error', type: 'system_error', message: `the sandbox failed to start: ${describe(err).message}` });
}
process.on('uncaughtException', escaped);
process.on('unhandledRejection', escaped);

// console.* lands in the run's log; the server caps the total.
for (const [method, level] of [
  ['debug', 'debug'],
  ['log', 'info'],
  ['info', 'info'],
  ['warn', 'warn'],
  ['error', 'error'],
  ['trace', 'debug'],
] as const) {
  console[method] = (...args: unknown[]) => send({ t: 'log', level, message: format(...args) });
}
const log = Object.fromEntries(
  (['debug', 'info', 'warn', 'error'] as const).map((level: LogLevel) => [level, (...args: unknown[]) => send({ t: 'log', level, message: format(...args) })]),
);

/** Why a value is not JSON (a path to the first offending part), or undefined when it is. */
function notJson(value: unknown, path = 'the return value', seen = new Set<object>()): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `${path} is ${value}`;
  if (typeof value !== 'object') return `${path} is a ${typeof value}`;
  if (seen.has(value)) return `${path} is a circular reference`;
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const why = notJson(value[i], `${path}[${i}]`, seen);
        if (why) return why;
      }
      return undefined;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return `${path} is a ${proto?.constructor?.name ?? 'non-plain object'}, not plain JSON`;
    for (const [key, item] of Object.entries(value)) {
      const why = notJson(item, `${path}.${key}`, seen);
      if (why) return why;
    }
    return undefined;
  } finally {
    seen.delete(value);
  }
}

const ARTIFACT_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
let artifactCount = 0;
let artifactBytes = 0;
const artifacts = {
  async save(name: string, bytes: Uint8Array | ArrayBuffer | string, contentType = 'application/octet-stream'): Promise<void> {
    if (!config.artifacts.enabled) throw new Error('artifacts cannot be saved in this run');
    if (typeof name !== 'string' || !ARTIFACT_NAME.test(name)) {
      throw new Error('artifact name must be 1-128 characters of letters, digits, ".", "_" or "-", not starting with "." or "-"');
    }
    if (typeof contentType !== 'string' || !/^[\w.+-]+\/[\w.+-]+(?:\s*;.*)?$/.test(contentType) || contentType.length > 200) {
      throw new Error(`artifact content type "${String(contentType).slice(0, 50)}" is not a media type`);
    }
    const data =
      typeof bytes === 'string'
        ? Buffer.from(bytes)
        : bytes instanceof ArrayBuffer
          ? Buffer.from(bytes)
          : ArrayBuffer.isView(bytes)
            ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
            : undefined;
    if (!data) throw new Error('artifact bytes must be a Buffer, Uint8Array, ArrayBuffer or string');
    if (artifactCount + 1 > config.artifacts.maxCount) throw new Error(`at most ${config.artifacts.maxCount} artifacts may be saved`);
    if (artifactBytes + data.length > config.artifacts.maxBytes) throw new Error(`artifacts may hold at most ${config.artifacts.maxBytes} bytes in all`);
    artifactCount++;
    artifactBytes += data.length;
    send({ t: 'artifact', name, contentType, data: data.toString('base64') });
  },
};

/** The page whose CDP target id this is, if the context has it. */
async function pageByTarget(context: BrowserContext, targetId: string): Promise<Page | undefined> {
  for (const page of context.pages()) {
    const cdp = await context.newCDPSession(page);
    try {
      const { targetInfo } = (await cdp.send('Target.getTargetInfo')) as { targetInfo: { targetId: string } };
      if (targetInfo.targetId === targetId) return page;
    } finally {
      await cdp.detach().catch(() => {});
    }
  }
  return undefined;
}

/** The in-sandbox end of the relay: loopback TCP to the server's Unix socket. */
function startRelay(): Promise<number> {
  const server = createServer((client) => {
    // Small messages each awaited: not held back for Nagle's algorithm (see relay.ts).
    client.setNoDelay(true);
    const upstream = connect(INSIDE.socket);
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

/** Requests for a person awaiting the server's answer, by id. */
const waiting = new Map<number, { resolve(value: string): void; reject(err: Error): void }>();
let nextAsk = 0;

/** An error whose stack is the call site's (so its line is the user's), with this message. */
function errorAt(site: Error, message: string): Error {
  const err = new Error(message);
  err.stack = `Error: ${message}\n${String(site.stack ?? '')
    .split('\n')
    .slice(1)
    .join('\n')}`;
  return err;
}

/** ctx.requestIntervention: asks a person (through the server) and resolves to the answer. */
function requestIntervention(q: InterventionAsk): Promise<string> {
  const site = new Error();
  const problem = interventionProblem(q);
  if (problem) return Promise.reject(errorAt(site, problem));
  if (!config.interventions) return Promise.reject(errorAt(site, NO_INTERVENTIONS));
  const id = ++nextAsk;
  return new Promise<string>((resolve, reject) => {
    waiting.set(id, { resolve, reject: (err) => reject(errorAt(site, err.message)) });
    // stdin keeps the process alive only while someone is awaited.
    process.stdin.ref();
    send({
      t: 'intervention',
      id,
      message: q.message,
      input_type: q.input_type,
      ...(q.timeout_seconds !== undefined ? { timeout_seconds: q.timeout_seconds } : {}),
    });
  });
}

function onServerMessage(message: ServerMessage): void {
  const w = waiting.get(message.id);
  if (!w) return;
  waiting.delete(message.id);
  if (waiting.size === 0) process.stdin.unref();
  if (message.t === 'answer') w.resolve(String(message.value));
  else w.reject(new Error(String(message.message)));
}

/**
 * Lines from the server on stdin: a ChildConnect perhaps, then the run's settings (the
 * first line that is not a connect), then the answers to requests for a person.
 */
const early: unknown[] = [];
let lineWanted: ((line: unknown) => void) | undefined;
let gotSettings = false;
function readStdin(): void {
  let buffered = Buffer.alloc(0);
  process.stdin.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    for (let nl = buffered.indexOf(10); nl !== -1; nl = buffered.indexOf(10)) {
      const line = buffered.subarray(0, nl).toString('utf8');
      buffered = buffered.subarray(nl + 1);
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch (err) {
        if (!gotSettings) escaped(err);
        continue;
      }
      if (gotSettings) {
        onServerMessage(parsed as ServerMessage);
        continue;
      }
      if ((parsed as Partial<ChildConnect>)?.t !== 'connect') {
        gotSettings = true;
        process.stdin.unref();
      }
      const wanted = lineWanted;
      lineWanted = undefined;
      if (wanted) wanted(parsed);
      else early.push(parsed);
    }
  });
  // The server closed stdin without a run: a warm child no longer wanted.
  process.stdin.on('end', () => {
    if (!gotSettings) process.exit(0);
  });
}

function nextLine(): Promise<unknown> {
  if (early.length > 0) return Promise.resolve(early.shift());
  return new Promise((resolve) => (lineWanted = resolve));
}

async function connectTo(port: number, cdpPath: string): Promise<{ browser: Browser; context: BrowserContext }> {
  const browser = await chromium.connectOverCDP(`ws://127.0.0.1:${port}${cdpPath}`, { timeout: 15_000 });
  const context = browser.contexts()[0] ?? (await browser.newContext());
  return { browser, context };
}

async function main(): Promise<void> {
  let page, context, browser;
  const port = await startRelay();
  await rehearse(chromium);
  send({ t: 'ready' });
  readStdin();
  let line = await nextLine();
  // A warm pair: connected before the run is known, to the browser that is to be the run's.
  let connectedTo: string | undefined;
  if ((line as Partial<ChildConnect>)?.t === 'connect') {
    connectedTo = String((line as ChildConnect).cdpPath);
    try {
      ({ browser, context } = await connectTo(port, connectedTo));
    } catch (err) {
      finish({ t: 'error', type: 'system_error', message: `could not connect to the session's browser: ${describe(err).message}` });
    }
    send({ t: 'connected' });
    line = await nextLine();
  }
  config = line as ChildConfig;
  try {
    if (connectedTo === undefined) ({ browser, context } = await connectTo(port, config.cdpPath));
    else if (config.cdpPath !== connectedTo) throw new Error('the run is for another browser than the one connected');
    page = (config.pageTargetId ? await pageByTarget(context!, config.pageTargetId) : undefined) ?? context!.pages()[0] ?? (await context!.newPage());
  } catch (err) {
    finish({ t: 'error', type: 'system_error', message: `could not connect to the session's browser: ${describe(err).message}` });
  }
  let run: unknown;
  userPhase = true;
  try {
    run = ((await import(pathToFileURL(INSIDE.code).href)) as { default?: unknown }).default;
  } catch (err) {
    userFailure(err);
  }
  if (typeof run !== 'function') {
    finish({ t: 'error', type: 'automation_failure', message: 'the code must have `export default async function run(ctx)`' });
  }
  send({ t: 'start' });
  let value: unknown;
  try {
    value = await (run as (ctx: unknown) => unknown)({ page, context, browser, input: config.input, artifacts, log, requestIntervention });
  } catch (err) {
    userFailure(err);
  }
  if (value === undefined) value = null;
  const why = notJson(value);
  if (why) finish({ t: 'error', type: 'automation_failure', message: `the result must be JSON: ${why}` });
  const size = Buffer.byteLength(JSON.stringify(value));
  if (size > config.outputMaxBytes) {
    finish({ t: 'error', type: 'automation_failure', message: `the result is ${size} bytes of JSON, over the limit of ${config.outputMaxBytes}` });
  }
  finish({ t: 'result', value });
}

void main();
