// PGlite in a thread of its own (worker_threads), driven by pglite-thread.ts: its statements run on
// another core instead of blocking the server's event loop, which also serves requests,
// the CDP proxy and live views. Plain JavaScript because Node loads it itself, with no
// TypeScript loader (under vitest the tests' loader does not reach worker threads).
//
// Messages from the parent, each answered with { id, rows } or { id } or { id, error }:
//   { id, op: 'query', sql, params, tx?, begin? }  a statement, inside transaction `tx` if
//       given; `begin` on its first statement opens it (a transaction that runs no
//       statement costs nothing here: a message less per transaction)
//   { id, op: 'end', tx, commit }  commits transaction `tx`, or rolls it back
//   { id, op: 'close' }            closes the database
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, types } from '@electric-sql/pglite';

// The WebAssembly comes compiled from the parent (once for the process, not per thread).
// bigint and numeric arrive as strings by default; every number we store fits a double.
const toNumber = (v) => Number(v);
const lite = new PGlite(workerData.dir, {
  ...workerData.wasm,
  parsers: { [types.INT8]: toNumber, [types.NUMERIC]: toNumber },
});

/** An error as data: its message and every field PostgreSQL gave it (code, detail, ...). */
function errorData(err) {
  if (!(err instanceof Error)) return { message: String(err) };
  const data = { name: err.name, message: err.message };
  for (const [k, v] of Object.entries(err)) {
    if (v === undefined || typeof v === 'function' || (typeof v === 'object' && v !== null)) continue;
    data[k] = v;
  }
  return data;
}

const reply = (msg) => parentPort.postMessage(msg);
/** Open transactions by id: their handle and how to end them, once open. */
const open = new Map();
// A rollback asked for by the parent (its callback threw): not an error of its own.
const ROLLBACK = Symbol('rollback');

/** Opens transaction `id`: PGlite's own, held until the parent ends it. */
function begin(id) {
  const opening = new Promise((resolve, reject) => {
    // PGlite calls back only after its BEGIN has run, so `ended` is set by then.
    const ended = lite.transaction(
      (t) =>
        new Promise((finish, abort) => {
          resolve({ t, ended, end: (commit) => (commit ? finish() : abort(ROLLBACK)) });
        }),
    );
    // Opening failed (PGlite closed): answer that, rather than wait forever.
    ended.catch(reject);
  });
  open.set(id, opening);
  return opening;
}

async function handle(msg) {
  switch (msg.op) {
    case 'query': {
      let target = lite;
      if (msg.tx !== undefined) {
        const entry = msg.begin ? begin(msg.tx) : open.get(msg.tx);
        if (!entry) throw new Error(`transaction ${msg.tx} is not open`);
        target = (await entry).t;
      }
      return { rows: (await target.query(msg.sql, msg.params)).rows };
    }
    case 'end': {
      const entry = open.get(msg.tx);
      if (!entry) throw new Error(`transaction ${msg.tx} is not open`);
      open.delete(msg.tx);
      const { end, ended } = await entry;
      end(msg.commit);
      try {
        await ended;
      } catch (err) {
        if (err !== ROLLBACK) throw err;
      }
      return {};
    }
    case 'close':
      if (!lite.closed) await lite.close();
      return {};
    default:
      throw new Error(`unknown operation ${msg.op}`);
  }
}

parentPort.on('message', (msg) => {
  handle(msg).then(
    (out) => reply({ id: msg.id, ...out }),
    (err) => reply({ id: msg.id, error: errorData(err) }),
  );
});

lite.waitReady.then(
  () => reply({ id: 0 }),
  (err) => reply({ id: 0, error: errorData(err) }),
);
