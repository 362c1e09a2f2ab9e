// The runner's public types (index.ts re-exports them).
export type SandboxErrorType = 'automation_failure' | 'timeout' | 'system_error' | 'cancelled';
export interface SandboxLogLine {
  at: string;
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
}
export interface SandboxArtifact {
  name: string;
  /** Host path of the saved bytes. */
  path: string;
  size: number;
  contentType: string;
}
export interface SandboxRequest {
  /** 'task': a TypeScript module with `export default async function run(ctx)`, ctx = {page, context, browser, input, artifacts: {save(name, bytes, contentType)}, log: {debug,info,warn,error}} (console.* also lands in the log).
   *  'snippet': the body of an async function given page, context, browser (execute-code). */
  kind: 'task' | 'snippet';
  /** TypeScript source (already base64-decoded). */
  code: string;
  /** The session's cdp_url (ws://...?token=...), reached by the child and nothing else. */
  cdpUrl: string;
  /** The CDP target id of the page ctx.page is (execute-code: the page on screen); default the context's first page. */
  pageTargetId?: string;
  /** JSON, ctx.input. */
  input?: unknown;
  timeoutMs: number;
  /** Default 512. */
  memoryMb?: number;
  /** The JSON result and the log, each; default 1 MiB. */
  outputMaxBytes?: number;
  /** Host dir where artifacts.save writes (made at the first artifact); absent: save throws. */
  artifactsDir?: string;
  /** Cancel: the child is killed, outcome 'cancelled'. */
  signal?: AbortSignal;
  onLog?: (line: SandboxLogLine) => void;
  /**
   * ctx.requestIntervention (tasks): asks a person and resolves to the answer; a rejection's
   * message reaches the code as its error. `signal` aborts when the run ends (any end: its
   * time limit keeps running while a person is awaited), and the run waits for the returned
   * promise to settle before it reports, so a withdrawn request is gone by then. Absent
   * (execute-code): the call rejects with "interventions are not available here".
   */
  onIntervention?: (q: SandboxIntervention, signal: AbortSignal) => Promise<string>;
  /**
   * Called once, when the code has returned a result that the run will report as its
   * success (ok: true, with this value): the child has said its last word and is killed,
   * so it can no longer act, while the outcome still waits for its output to be read to
   * the end and every process of it to be gone. What the caller does next that needs
   * neither (a task run ends its session) can start here.
   */
  onSuccess?: (value: unknown) => void;
}
export interface SandboxIntervention {
  message: string;
  inputType: 'confirm' | 'text' | 'otp' | 'takeover';
  /** Absent: the interventions service's default. */
  timeoutMs?: number;
}
interface OutcomeParts {
  logs: SandboxLogLine[];
  artifacts: SandboxArtifact[];
  durationMs: number;
  /** The sandbox's own cost: spawn to user code start. */
  sandboxMs: number;
}
export type SandboxOutcome =
  | ({ ok: true; value: unknown } & OutcomeParts)
  | ({ ok: false; error: { type: SandboxErrorType; message: string; line?: number; rootCause?: string } } & OutcomeParts);
