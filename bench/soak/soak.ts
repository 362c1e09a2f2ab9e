// bench/soak: sessions at a steady concurrency for a long time, ended in every way a session
// ends in production, then checks that nothing leaked and nothing was counted twice.
//
// The real server runs as a child process (server/testing/child-server.ts) with a TMPDIR of
// its own, so every browser root and temporary file it makes is under one directory we can
// inspect. A local receiver takes webhooks: one endpoint answers at once, one hangs. Each
// session takes an end path from a seeded mix:
//   delete       CDP client does a command and closes cleanly; DELETE     → completed/api
//   timeout      timeout {max_duration: 1} or {idle_timeout: 1} minute     → completed/max_duration|idle_timeout
//   kill         kill -9 of its Chromium (found by its user-data dir)     → failed/browser_unreachable
//   cdp_vanish   a raw CDP WebSocket sends half a frame, or a whole message, and drops; the
//                session must still be running and reachable; DELETE     → completed/api
//   viewer_drop  live-view viewers connect, get a frame, and drop; DELETE → completed/api
// and, independently, recording on or off and headless or headful (Xvfb).
// Checks at the end, each PASS or FAIL: the database's end of every session, one terminal
// event each at the fast receiver, one ledger charge each, no process or directory left,
// server RSS and open fds flat after warm-up.
//
// Usage: pnpm soak [--minutes 30] [--concurrency 4] [--seed 1] [--db pglite|postgres]
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { prng } from '../../conformance/prng.js';
import { installationId } from '../../server/browser/roots.js';
import { openDb, type Db } from '../../server/store/db.js';
import { withPostgresSchema } from '../../server/store/pg-schema.js';
import { startChildServer, type ChildServer } from '../../server/testing/child-server.js';
import { browserPidOf, linearFit, openFds, rssBytes, serverProcesses, slopeBeside } from './procs.js';
import { startReceivers, type Receivers } from './receivers.js';

export type EndPath = 'delete' | 'timeout' | 'kill' | 'cdp_vanish' | 'viewer_drop';
export const END_PATHS: readonly EndPath[] = ['delete', 'timeout', 'kill', 'cdp_vanish', 'viewer_drop'];

export interface SoakOptions {
  minutes: number;
  concurrency: number;
  seed: number;
  db: 'pglite' | 'postgres';
  /** Where progress lines go (default console.log). */
  log?: (line: string) => void;
}

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

export interface SoakResult {
  checks: Check[];
  sessions: number;
  byPath: Record<EndPath, number>;
  figures: string[];
}

interface Plan {
  path: EndPath;
  recording: boolean;
  headless: boolean;
  /** timeout: which limit; cdp_vanish: half a frame or a whole message; viewer_drop: viewers. */
  variant: number;
}

interface Driven {
  id: string;
  plan: Plan;
  expected: { status: 'completed' | 'failed'; reason: string };
}

// Weights of the end paths: timeouts hold a browser for a minute, so they are fewer.
const WEIGHTS: Record<EndPath, number> = { delete: 0.3, timeout: 0.1, kill: 0.2, cdp_vanish: 0.22, viewer_drop: 0.18 };

export function planFor(seed: number, index: number): Plan {
  // One stream per session index, so the mix does not depend on timing.
  const r = prng(seed * 1_000_003 + index * 7919 + 1);
  let x = r();
  let path: EndPath = 'delete';
  for (const p of END_PATHS) {
    if (x < WEIGHTS[p]) {
      path = p;
      break;
    }
    x -= WEIGHTS[p];
  }
  return { path, recording: r() < 0.35, headless: r() < 0.65, variant: Math.floor(r() * 2) };
}

function expectedEnd(plan: Plan): Driven['expected'] {
  if (plan.path === 'kill') return { status: 'failed', reason: 'browser_unreachable' };
  if (plan.path === 'timeout') return { status: 'completed', reason: plan.variant === 0 ? 'max_duration' : 'idle_timeout' };
  return { status: 'completed', reason: 'api' };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (b: number) => (b / 2 ** 20).toFixed(1);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/** Opens a WebSocket, resolving once open (rejecting on error or after 10 s). */
function openWs(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    const t = setTimeout(() => {
      ws.terminate();
      reject(new Error(`WebSocket ${url.split('?')[0]} did not open in 10 s`));
    }, 10_000);
    ws.once('open', () => {
      clearTimeout(t);
      resolve(ws);
    });
    ws.once('error', (err) => {
      clearTimeout(t);
      reject(err);
    });
  });
}

/** One CDP command over a fresh connection, answered; the connection closed cleanly after. */
async function cdpRoundTrip(cdpUrl: string, method: string): Promise<void> {
  const ws = await openWs(cdpUrl);
  try {
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`${method} not answered in 10 s`)), 10_000);
      ws.on('message', (data) => {
        const msg = JSON.parse(data.toString()) as { id?: number; error?: { message: string } };
        if (msg.id !== 1) return;
        clearTimeout(t);
        if (msg.error) reject(new Error(`${method}: ${msg.error.message}`));
        else resolve();
      });
      ws.once('close', () => reject(new Error(`CDP connection closed before ${method} was answered`)));
      ws.send(JSON.stringify({ id: 1, method }));
    });
  } finally {
    ws.close();
  }
}

/**
 * A client frame (masked, as RFC 6455 requires of clients) cut in half: the header promises
 * the whole payload, half of it arrives, then the TCP connection is gone.
 */
function halfFrame(payload: Buffer): Buffer {
  const mask = randomBytes(4);
  const header =
    payload.length < 126 ? Buffer.from([0x81, 0x80 | payload.length]) : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
  const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
  return Buffer.concat([header, mask, masked.subarray(0, masked.length >> 1)]);
}

export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  if (o.db === 'postgres') {
    const url = process.env.DATABASE_URL;
    if (!url) throw new Error('--db postgres needs DATABASE_URL');
    return withPostgresSchema(url, 'soak', (schemaUrl) => soakOn(o, schemaUrl));
  }
  return soakOn(o, undefined);
}

async function soakOn(o: SoakOptions, databaseUrl: string | undefined): Promise<SoakResult> {
  const log = o.log ?? ((line: string) => console.log(line));
  const dataDir = mkdtempSync(join(tmpdir(), 'cb-soak-data-'));
  // The server's TMPDIR, as short as a path can be: Chromium puts a Unix socket several
  // levels below it (a browser root's tmp/), and socket paths are limited to 107 bytes.
  const tmp = mkdtempSync('/tmp/cs');
  // Searchable by others: a root server runs each browser under a uid of its own.
  chmodSync(tmp, 0o711);
  const browsersDir = join(tmp, `cb-${installationId(dataDir)}`);
  const recordingsWork = join(dataDir, 'recordings', '.work');
  const apiKey = `sk_soak_${randomBytes(12).toString('hex')}`;
  const checks: Check[] = [];
  const check = (name: string, ok: boolean, detail: string) => {
    checks.push({ name, ok, detail });
    log(`${ok ? 'PASS' : 'FAIL'} ${name}: ${detail}`);
  };
  const figures: string[] = [];
  const figure = (line: string) => {
    figures.push(line);
    log(line);
  };

  let receivers: Receivers | undefined;
  let server: ChildServer | undefined;
  try {
    const t0 = Date.now();
    const phases: string[] = [];
    let phaseStart = t0;
    const phase = (name: string) => {
      phases.push(`${name} ${((Date.now() - phaseStart) / 1000).toFixed(0)} s`);
      phaseStart = Date.now();
    };
    receivers = await startReceivers();
    server = await startChildServer({
      dataDir,
      apiKey,
      databaseUrl,
      env: {
        TMPDIR: tmp,
        BROWSER_POOL_SIZE: '0',
        MAX_CONCURRENT_BROWSERS: '64',
        SESSION_CREATE_RATE_PER_MINUTE: '100000',
        INCLUDED_CREDITS: '100000000',
        ...(process.env.CHROMIUM_PATH ? { CHROMIUM_PATH: process.env.CHROMIUM_PATH } : {}),
      },
    });
    const srv = server;
    const serverPid = srv.child.pid!;
    const json = async (path: string, init?: RequestInit) => {
      const res = await srv.request(path, { ...init, headers: { 'content-type': 'application/json' } });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : undefined) as Record<string, any> };
    };
    const events = ['session.completed', 'session.failed', 'session.recording.ready'];
    const fast = await json('/v1/webhooks', { method: 'POST', body: JSON.stringify({ url: receivers.fastUrl, subscribed_events: events }) });
    const hang = await json('/v1/webhooks', { method: 'POST', body: JSON.stringify({ url: receivers.hangUrl, subscribed_events: events }) });
    if (fast.status >= 300 || hang.status >= 300) throw new Error(`webhook creation answered ${fast.status}/${hang.status}`);
    const fastWebhookId = String(fast.body.id);

    log(
      `soak: ${o.minutes} min at concurrency ${o.concurrency}, seed ${o.seed}, ${databaseUrl ? 'PostgreSQL' : 'PGlite'}; server pid ${serverPid}; load ${load()}`,
    );

    const driven: Driven[] = [];
    const problems: string[] = [];
    const createFailures: string[] = [];
    const byPath = Object.fromEntries(END_PATHS.map((p) => [p, 0])) as Record<EndPath, number>;
    phase('server start');
    const started = Date.now();
    const deadline = started + o.minutes * 60_000;
    let inFlight = 0;
    // With each sample, what holds fds for a while: sessions in flight, deliveries held open.
    const samples: { t: number; rss: number; fds: number; inFlight: number; hooks: number }[] = [];
    const sample = () =>
      samples.push({ t: (Date.now() - started) / 1000, rss: rssBytes(serverPid), fds: openFds(serverPid), inFlight, hooks: receivers!.open() });
    const sampler = setInterval(sample, 2_000);
    const progress = () => {
      const p = serverProcesses(serverPid, [browsersDir, dataDir]);
      const s = samples[samples.length - 1];
      const el = Math.round((Date.now() - started) / 1000);
      log(
        `[${String(Math.floor(el / 60)).padStart(2, '0')}:${String(el % 60).padStart(2, '0')}] sessions ${driven.length} (${END_PATHS.map((k) => `${k} ${byPath[k]}`).join(', ')}), in flight ${inFlight}` +
          ` | server RSS ${s ? mib(s.rss) : '?'} MiB, fds ${s?.fds ?? '?'} | chromium ${p.chromium}, Xvfb ${p.xvfb}, ffmpeg ${p.ffmpeg} | webhooks received ${receivers!.received.length} | load ${load()}`,
      );
    };
    const progressTimer = setInterval(progress, 30_000);

    const waitEnded = async (id: string, withinMs: number): Promise<string | undefined> => {
      const until = Date.now() + withinMs;
      for (;;) {
        const r = await json(`/v1/sessions/${id}`);
        const st = r.body?.data?.status as string | undefined;
        if (st === 'completed' || st === 'failed') return `${st}/${r.body.data.end_reason}`;
        if (Date.now() > until) return undefined;
        await sleep(1_000);
      }
    };
    const stillRunning = async (id: string, cdpUrl: string, what: string) => {
      await sleep(200);
      const r = await json(`/v1/sessions/${id}`);
      if (r.body?.data?.status !== 'running') throw new Error(`after ${what} the session is ${r.body?.data?.status}/${r.body?.data?.end_reason}`);
      await cdpRoundTrip(cdpUrl, 'Browser.getVersion'); // and a new client still gets through
    };
    const del = async (id: string) => {
      const r = await json(`/v1/sessions/${id}`, { method: 'DELETE' });
      if (r.status !== 200) throw new Error(`DELETE answered ${r.status}: ${JSON.stringify(r.body)}`);
    };

    const parked = new Set<Promise<void>>();
    let next = 0;
    const drive = async (index: number, note: { id?: string }) => {
      let plan = planFor(o.seed, index);
      // A timeout session lasts a minute: none that would outlast the run by much.
      if (plan.path === 'timeout' && deadline - Date.now() < 65_000) plan = { ...plan, path: 'delete' };
      const body = {
        session: {
          recording: { active: plan.recording },
          ...(plan.path === 'timeout' ? { timeout: plan.variant === 0 ? { max_duration: 1 } : { idle_timeout: 1 } } : {}),
        },
        browser: { headless: { active: plan.headless } },
      };
      const created = await json('/v1/sessions', { method: 'POST', body: JSON.stringify(body) });
      if (created.status !== 200) {
        createFailures.push(`#${index} ${created.status} ${JSON.stringify(created.body)}`);
        if (createFailures.length === 1) log(`first refused creation; the server's stderr ends: ${srv.stderr().slice(-1500)}`);
        return;
      }
      const { id, cdp_url: cdpUrl, live_view_url: liveViewUrl } = created.body.data as { id: string; cdp_url: string; live_view_url: string };
      note.id = id;
      const d: Driven = { id, plan, expected: expectedEnd(plan) };
      driven.push(d);
      byPath[plan.path]++;
      switch (plan.path) {
        case 'delete':
          await cdpRoundTrip(cdpUrl, 'Target.getTargets');
          await del(id);
          return;
        case 'timeout': {
          const ended = waitEnded(id, 150_000).then((end) => {
            if (end !== `${d.expected.status}/${d.expected.reason}`) problems.push(`${id} (timeout): ended ${end ?? 'not within 150 s'}`);
          });
          parked.add(ended);
          void ended.finally(() => parked.delete(ended));
          if (parked.size >= o.concurrency) await Promise.race(parked);
          return;
        }
        case 'kill': {
          const rootOf = () =>
            (existsSync(browsersDir) ? readdirSync(browsersDir) : []).find((r) => {
              try {
                return (JSON.parse(readFileSync(join(browsersDir, r, 'owner.json'), 'utf8')) as { sessionId?: string }).sessionId === id;
              } catch {
                return false;
              }
            });
          const r = rootOf();
          const pid = r ? browserPidOf(join(browsersDir, r)) : undefined;
          if (!pid) throw new Error('its Chromium was not found by its user-data dir');
          process.kill(pid, 'SIGKILL');
          const end = await waitEnded(id, 30_000);
          if (!end) throw new Error('not ended 30 s after its Chromium was killed');
          return;
        }
        case 'cdp_vanish': {
          const ws = await openWs(cdpUrl);
          const message = Buffer.from(JSON.stringify({ id: 1, method: 'Browser.getVersion', params: {}, pad: 'x'.repeat(400) }));
          if (plan.variant === 0) {
            const socket = (ws as unknown as { _socket: Socket })._socket;
            socket.write(halfFrame(message));
            socket.destroy();
          } else {
            ws.send(message);
            ws.terminate();
          }
          await stillRunning(id, cdpUrl, plan.variant === 0 ? 'half a CDP frame' : 'a CDP client vanishing');
          await del(id);
          return;
        }
        case 'viewer_drop': {
          const u = new URL(liveViewUrl);
          const wsUrl = `ws://${u.host}/live/${id}/ws?token=${u.searchParams.get('token')}`;
          const viewers = await Promise.all(Array.from({ length: plan.variant + 1 }, () => openWs(wsUrl)));
          await Promise.all(
            viewers.map(
              (v) =>
                new Promise<void>((resolve) => {
                  const t = setTimeout(resolve, 3_000);
                  v.once('message', () => {
                    clearTimeout(t);
                    resolve();
                  });
                }),
            ),
          );
          // The first drops its TCP connection without a close frame; a second closes politely.
          viewers.forEach((v, i) => (i === 0 ? v.terminate() : v.close()));
          await stillRunning(id, cdpUrl, 'live-view viewers dropping');
          await del(id);
          return;
        }
      }
    };
    const worker = async () => {
      while (Date.now() < deadline) {
        const index = next++;
        const note: { id?: string } = {};
        inFlight++;
        try {
          await drive(index, note);
        } catch (err) {
          problems.push(`#${index} ${note.id ?? ''} (${planFor(o.seed, index).path}): ${(err as Error).message}`);
        } finally {
          inFlight--;
        }
      }
    };
    await Promise.all(Array.from({ length: o.concurrency }, worker));
    clearInterval(sampler);
    const driveSeconds = (Date.now() - started) / 1000;
    phase('drive');
    await Promise.all(parked);
    phase('time-outs to end');
    clearInterval(progressTimer);
    progress();
    log(
      `drove ${driven.length} sessions in ${driveSeconds.toFixed(0)} s (${(driven.length / (driveSeconds / 60)).toFixed(1)}/min); waiting for webhooks and cleanup`,
    );

    // The fast receiver: every session's terminal event, once (the outbox drained).
    const terminal = (sid: string) => receivers!.received.filter((r) => r.sessionId === sid && (r.type === 'session.completed' || r.type === 'session.failed'));
    for (const until = Date.now() + 60_000; Date.now() < until && driven.some((d) => terminal(d.id).length === 0); ) await sleep(500);
    // Recordings are encoded after the end: give ffmpeg and the last teardown time to finish.
    const leftNow = () => {
      const p = serverProcesses(serverPid, [browsersDir, dataDir]);
      const roots = existsSync(browsersDir) ? readdirSync(browsersDir) : [];
      const work = existsSync(recordingsWork) ? readdirSync(recordingsWork) : [];
      return { p, roots, work };
    };
    phase('outbox to drain');
    let left = leftNow();
    for (const until = Date.now() + 60_000; Date.now() < until && left.p.list.length + left.roots.length + left.work.length > 0; left = leftNow())
      await sleep(1_000);

    check(
      'sessions driven',
      createFailures.length === 0 && problems.length === 0 && driven.length > 0,
      `${driven.length} sessions (${END_PATHS.map((k) => `${k} ${byPath[k]}`).join(', ')}); create refused ${createFailures.length}${createFailures.length ? `: ${createFailures.slice(0, 3).join('; ')}` : ''}; problems ${problems.length}${problems.length ? `: ${problems.slice(0, 5).join('; ')}` : ''}`,
    );

    const wrongEvents: string[] = [];
    let duplicates = 0;
    for (const d of driven) {
      const t = terminal(d.id);
      const ids = new Set(t.map((r) => r.id));
      if (t.length > ids.size) duplicates += t.length - ids.size;
      const want = d.expected.status === 'completed' ? 'session.completed' : 'session.failed';
      if (ids.size !== 1 || t[0]!.type !== want || t.some((r) => r.webhookId !== r.id))
        wrongEvents.push(`${d.id} (${d.plan.path}): ${t.map((r) => `${r.type} ${r.id}`).join(', ') || 'none'}`);
    }
    check(
      'one terminal event per session at the fast receiver',
      wrongEvents.length === 0 && duplicates === 0,
      `${driven.length - wrongEvents.length}/${driven.length} right, ${duplicates} redelivered${wrongEvents.length ? `; wrong: ${wrongEvents.slice(0, 5).join('; ')}` : ''}`,
    );
    const recordingReady = new Map<string, number>();
    for (const r of receivers.received)
      if (r.type === 'session.recording.ready' && r.sessionId) recordingReady.set(r.sessionId, (recordingReady.get(r.sessionId) ?? 0) + 1);
    const recorded = driven.filter((d) => d.plan.recording);
    const twice = [...recordingReady.values()].filter((n) => n > 1).length;
    const unrecorded = [...recordingReady.keys()].filter((sid) => !recorded.some((d) => d.id === sid)).length;
    check(
      'recording.ready at most once, only for recorded sessions',
      twice === 0 && unrecorded === 0,
      `${recordingReady.size} of ${recorded.length} recorded sessions announced a recording (${END_PATHS.map((k) => `${k} ${recorded.filter((d) => d.plan.path === k && recordingReady.has(d.id)).length}/${recorded.filter((d) => d.plan.path === k).length}`).join(', ')}; one with no frame has none); ${twice} twice; ${unrecorded} for sessions not recorded`,
    );
    const hung = receivers.hung();
    figure(`hanging receiver: ${hung.answeredLate} deliveries answered after the deadline, ${hung.neverAnswered} never answered`);

    check(
      'no Chromium, Xvfb or ffmpeg left (server running)',
      left.p.list.length === 0,
      `chromium ${left.p.chromium}, Xvfb ${left.p.xvfb}, ffmpeg ${left.p.ffmpeg}, other ${left.p.other}${
        left.p.list.length
          ? `: ${left.p.list
              .slice(0, 8)
              .map((x) => `${x.pid} ${x.comm}`)
              .join(', ')}`
          : ''
      }`,
    );
    check(
      'no browser root or recording work directory left (server running)',
      left.roots.length + left.work.length === 0,
      `${left.roots.length} roots under ${browsersDir}, ${left.work.length} under ${recordingsWork}`,
    );

    // Flat after warm-up: a least-squares line through the samples after the first 20 % of
    // the run. Its rise over that window is compared with what noise allows: RSS swings
    // with garbage collection by some MiB whatever the run's length (10 % of the mean, at
    // least 16 MiB), while a leak of 100 KiB a session rises by ~80 MiB over 1,000 sessions.
    // Open fds follow the sessions in flight (each holds a CDP socket, its traffic proxy's
    // sockets, pipes to its processes: ~10-20) and the webhook deliveries held open; the fit
    // holds both still (slopeBeside), so that a short run on a loaded machine, with more in
    // flight at its end than at its start, does not read as a leak (CI, 6 sessions: a rise
    // of 26). The tolerance (16 fds plus one for every four sessions of the window) is below
    // a leak of one fd a session once the window holds ~22 sessions.
    const warm = samples.filter((s) => s.t >= driveSeconds * 0.2);
    const sessionsInWindow = Math.round(driven.length * 0.8);
    const rssFit = linearFit(warm.map((s) => ({ x: s.t, y: s.rss })));
    const fdSlope = slopeBeside(warm.map((s) => ({ x: s.t, y: s.fds, z: [s.inFlight, s.hooks] })));
    const rssMean = warm.reduce((a, s) => a + s.rss, 0) / Math.max(1, warm.length);
    const rssRise = rssFit.last - rssFit.first;
    const rssAllowed = Math.max(0.1 * rssMean, 16 * 2 ** 20);
    const fdRise = fdSlope * ((warm[warm.length - 1]?.t ?? 0) - (warm[0]?.t ?? 0));
    const fdAllowed = 16 + sessionsInWindow / 4;
    const firstS = warm[0];
    const lastS = warm[warm.length - 1];
    check(
      'server RSS flat after warm-up',
      warm.length >= 5 && rssRise <= rssAllowed,
      `${warm.length} samples; slope ${((rssFit.slope * 60) / 2 ** 20).toFixed(2)} MiB/min, fitted rise ${mib(rssRise)} MiB over ${((lastS?.t ?? 0) - (firstS?.t ?? 0)).toFixed(0)} s (allowed ${mib(rssAllowed)}); ${mib(firstS?.rss ?? 0)} → ${mib(lastS?.rss ?? 0)} MiB, mean ${mib(rssMean)}`,
    );
    check(
      'server open fds flat after warm-up',
      warm.length >= 5 && fdRise <= fdAllowed,
      `slope ${(fdSlope * 60).toFixed(2)} fds/min beside what was in flight, fitted rise ${fdRise.toFixed(1)} (allowed ${fdAllowed.toFixed(0)}); ${firstS?.fds ?? '?'} → ${lastS?.fds ?? '?'}, min ${Math.min(...warm.map((s) => s.fds))} max ${Math.max(...warm.map((s) => s.fds))}`,
    );
    figure(`server after the run, idle: RSS ${mib(rssBytes(serverPid))} MiB, fds ${openFds(serverPid)}; load ${load()}`);

    // Graceful stop, then what is left and what the database says.
    phase('cleanup');
    srv.child.kill('SIGTERM');
    const exit = await Promise.race([srv.exited, sleep(60_000).then(() => undefined)]);
    if (!exit) srv.child.kill('SIGKILL');
    check('server stops gracefully', exit?.code === 0, exit ? `exit code ${exit.code}, signal ${exit.signal}` : 'not stopped 60 s after SIGTERM');
    server = undefined;
    const after = serverProcesses(serverPid, [browsersDir, dataDir]);
    // Kept on purpose: the ad-block's rules indexed once for every later start on this
    // machine (server/browser/preindexed.ts), read by browsers and written by none.
    const tmpLeft = readdirSync(tmp).filter((n) => !n.startsWith('tsx-') && !n.startsWith('cb-preindexed-'));
    check(
      'nothing left after shutdown',
      after.list.length === 0 && tmpLeft.length === 0,
      `${after.list.length} processes; in the server's TMPDIR: ${tmpLeft.join(', ') || 'nothing'}`,
    );

    phase('server stop');
    const db = await openDb({ databaseUrl, dataDir });
    try {
      await databaseChecks(db, driven, fastWebhookId, check);
    } finally {
      await db.close();
    }
    phase('database checks');
    figure(`phases: ${phases.join(', ')}; ${((Date.now() - t0) / 1000).toFixed(0)} s in all`);
    return { checks, sessions: driven.length, byPath, figures };
  } finally {
    if (server) {
      server.child.kill('SIGKILL');
      await server.exited;
    }
    await receivers?.close();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(tmp, { recursive: true, force: true });
  }
}

async function databaseChecks(db: Db, driven: Driven[], fastWebhookId: string, check: (name: string, ok: boolean, detail: string) => void): Promise<void> {
  const rows = new Map(
    (
      await db.query<{ id: string; status: string; end_reason: string | null; credits_used: number; started_at: Date | null }>(
        'SELECT id, status, end_reason, credits_used, started_at FROM sessions',
      )
    ).map((r) => [r.id, r]),
  );
  const wrong: string[] = [];
  for (const d of driven) {
    const r = rows.get(d.id);
    if (!r || r.status !== d.expected.status || r.end_reason !== d.expected.reason)
      wrong.push(`${d.id} (${d.plan.path}): ${r ? `${r.status}/${r.end_reason}` : 'no row'}, expected ${d.expected.status}/${d.expected.reason}`);
  }
  const unknown = [...rows.keys()].filter((id) => !driven.some((d) => d.id === id));
  check(
    'every session ended in the database as expected',
    wrong.length === 0 && unknown.length === 0,
    `${driven.length - wrong.length}/${driven.length} right; ${unknown.length} rows of sessions not driven${wrong.length ? `; wrong: ${wrong.slice(0, 5).join('; ')}` : ''}`,
  );

  const ledger = new Map(
    (
      await db.query<{ session_id: string; n: number; credits: number }>(
        "SELECT session_id, count(*)::int AS n, sum(credits) AS credits FROM usage_ledger WHERE kind = 'session' GROUP BY session_id",
      )
    ).map((r) => [r.session_id, r]),
  );
  const unsettled: string[] = [];
  for (const d of driven) {
    const r = rows.get(d.id);
    const l = ledger.get(d.id);
    // A session that ran is charged once, for exactly its credits_used; one that never ran, not at all.
    const ok = r && (r.credits_used > 0 ? l?.n === 1 && Math.abs(l.credits - r.credits_used) < 1e-9 : !l) && (r.started_at === null || r.credits_used > 0);
    if (!ok) unsettled.push(`${d.id}: credits_used ${r?.credits_used}, ledger ${l ? `${l.n} rows, ${l.credits}` : 'none'}`);
  }
  check(
    'credits settled once per session',
    unsettled.length === 0,
    `${driven.length - unsettled.length}/${driven.length} settled once${unsettled.length ? `; wrong: ${unsettled.slice(0, 5).join('; ')}` : ''}`,
  );

  const evs = await db.query<{ sid: string; n: number }>(
    "SELECT data->>'session_id' AS sid, count(*)::int AS n FROM events WHERE type IN ('session.completed', 'session.failed') GROUP BY 1",
  );
  const count = new Map(evs.map((e) => [e.sid, e.n]));
  const off = driven.filter((d) => count.get(d.id) !== 1);
  check(
    'one terminal event per session in the outbox',
    off.length === 0,
    `${driven.length - off.length}/${driven.length}${
      off.length
        ? `; wrong: ${off
            .slice(0, 5)
            .map((d) => `${d.id} ${count.get(d.id) ?? 0}`)
            .join(', ')}`
        : ''
    }`,
  );

  const deliveries = await db.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1 GROUP BY status',
    [fastWebhookId],
  );
  const notDone = deliveries.filter((x) => x.status !== 'succeeded');
  const errors = notDone.length
    ? await db.query<{ error_message: string | null; n: number }>(
        "SELECT error_message, count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = $1 AND status <> 'succeeded' GROUP BY 1",
        [fastWebhookId],
      )
    : [];
  check(
    'fast webhook: every delivery succeeded first time',
    notDone.length === 0,
    (deliveries.map((x) => `${x.status} ${x.n}`).join(', ') || 'no deliveries') +
      (errors.length ? `; errors: ${errors.map((e) => `${e.n}× ${e.error_message}`).join('; ')}` : ''),
  );
}

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const db = flag('db', 'pglite');
  if (db !== 'pglite' && db !== 'postgres') throw new Error('--db is pglite or postgres');
  const result = await runSoak({ minutes: Number(flag('minutes', '30')), concurrency: Number(flag('concurrency', '4')), seed: Number(flag('seed', '1')), db });
  const failed = result.checks.filter((c) => !c.ok);
  console.log(`soak: ${result.checks.length - failed.length}/${result.checks.length} checks passed`);
  process.exit(failed.length ? 1 : 0);
}
