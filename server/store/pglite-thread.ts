// The parent's side of PGlite's own thread (pglite-worker.mjs): statements and transactions
// as messages, answered in any order, matched by id. PGlite there queues them as it would
// in this thread (one statement at a time, nothing beside an open transaction).
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';

type Answer = { id: number; rows?: unknown[]; error?: Record<string, unknown> & { message: string } };

/** An error from the thread, as PGlite raised it: its message and fields (code, detail, ...). */
function revive(data: Answer['error'] & object): Error {
  const { message, name, ...fields } = data;
  const err = Object.assign(new Error(message), fields);
  if (typeof name === 'string') err.name = name;
  return err;
}

export interface Transaction {
  readonly id: number;
  /** Whether a statement was sent, which opens it in the thread. */
  begun: boolean;
}

type Modules = { pgliteWasmModule: WebAssembly.Module; initdbWasmModule: WebAssembly.Module };
let compiled: Promise<Modules> | undefined;

/**
 * PGlite's WebAssembly, compiled once for the process. In one thread PGlite keeps what it
 * compiled for the next database it opens; a new thread would compile it again (3 s of CPU
 * on 2 cores, at every test server's start), so each thread is given this.
 */
function modules(): Promise<Modules> {
  compiled ??= (async () => {
    const dist = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
    const compile = async (file: string) => WebAssembly.compile(await readFile(join(dist, file)));
    const [pgliteWasmModule, initdbWasmModule] = await Promise.all([compile('pglite.wasm'), compile('initdb.wasm')]);
    return { pgliteWasmModule, initdbWasmModule };
  })();
  compiled.catch(() => (compiled = undefined));
  return compiled;
}

export class PgliteThread {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve: (a: Answer) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private nextTx = 1;
  /** Why the thread can take no more (closed, or it died). */
  private gone: Error | undefined;

  private constructor(dir: string | undefined, wasm: Modules) {
    // Only profiling flags pass on: the parent's loaders (tsx, vitest's) are not needed there.
    const execArgv = process.execArgv.filter((a) => a.startsWith('--cpu-prof') || a.startsWith('--heap-prof'));
    this.worker = new Worker(new URL('./pglite-worker.mjs', import.meta.url), { workerData: { dir, wasm }, execArgv });
    this.worker.on('message', (a: Answer) => this.settle(a));
    // A thread that dies (out of memory, a WASM abort) fails what it held and what comes after.
    this.worker.on('error', (err) => this.fail(err));
    this.worker.on('exit', (code) => this.fail(new Error(`PGlite's thread exited (code ${code})`)));
    this.worker.unref();
  }

  /** A thread with its database open (made when absent, as PGlite does). */
  static async start(dir: string | undefined): Promise<PgliteThread> {
    const thread = new PgliteThread(dir, await modules());
    try {
      await thread.ask(0);
    } catch (err) {
      await thread.worker.terminate();
      throw err;
    }
    return thread;
  }

  async query(sql: string, params: readonly unknown[], tx?: Transaction): Promise<unknown[]> {
    const begin = tx !== undefined && !tx.begun;
    if (tx) tx.begun = true;
    return (await this.send({ op: 'query', sql, params, tx: tx?.id, begin })).rows ?? [];
  }

  /** A transaction, opened in the thread with its first statement. */
  transaction(): Transaction {
    return { id: this.nextTx++, begun: false };
  }

  /** Commits (or rolls back) what the transaction's statements did. */
  async end(tx: Transaction, commit: boolean): Promise<void> {
    if (tx.begun) await this.send({ op: 'end', tx: tx.id, commit });
  }

  async close(): Promise<void> {
    if (this.gone) return;
    await this.send({ op: 'close' });
    this.gone = new Error('the database is closed');
    await this.worker.terminate();
  }

  private send(msg: object): Promise<Answer> {
    if (this.gone) return Promise.reject(this.gone);
    const id = this.nextId++;
    const answer = this.ask(id);
    this.worker.postMessage({ id, ...msg });
    return answer;
  }

  /** The answer to message `id`. The thread keeps the process alive only while one is awaited. */
  private ask(id: number): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      if (this.waiting.size === 0) this.worker.ref();
      this.waiting.set(id, { resolve, reject });
    });
  }

  private settle(a: Answer): void {
    const w = this.waiting.get(a.id);
    if (!w) return;
    this.waiting.delete(a.id);
    if (this.waiting.size === 0) this.worker.unref();
    if (a.error) w.reject(revive(a.error));
    else w.resolve(a);
  }

  private fail(err: Error): void {
    this.gone ??= err;
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
  }
}
