// bench/liveview: what a live-view client sees while the session animates (frames per
// second, end-to-end frame latency: from Chromium producing the frame to the client having
// it) beside a raw CDP screencast of the same page in the same run, and what recording
// costs: CPU of the session (its Chromium and Xvfb processes, plus the server) in percent
// of one core, recording an animated page beside not recording it and beside an idle
// session, and the encoding at the end.
// Usage: pnpm exec tsx bench/liveview.ts [--seconds 10] [--rounds 2]
import { setTimeout as sleep } from 'node:timers/promises';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { WebSocket } from 'ws';
import { startTestServer, type TestServer } from '../server/testing/harness.js';
import { browsersDirFor, createSession, rootOf } from '../server/sessions/test-support.js';
import { CdpClient, listPages } from '../server/browser/cdp-client.js';
import { machine, percentile } from './machine.js';

const arg = (name: string, fallback: number) => Number(process.argv[process.argv.indexOf(`--${name}`) + 1]) || fallback;
const SECONDS = arg('seconds', 10);
const ROUNDS = arg('rounds', 2);
const VIEWPORT = { width: 1280, height: 720 };
const QUALITY = 70;

// An animated page: a full-viewport canvas repainted every animation frame, and a still one.
const pages = createServer((req, res) => {
  res.setHeader('content-type', 'text/html');
  if (req.url === '/still') return res.end('<!doctype html><title>still</title><body style="margin:0;background:#eee"><h1>still</h1>');
  res.end(`<!doctype html><title>animate</title><body style="margin:0;overflow:hidden"><canvas id=c></canvas><script>
    const c = document.getElementById('c'); c.width = innerWidth; c.height = innerHeight; const x = c.getContext('2d'); let n = 0;
    (function f() { n++; x.fillStyle = 'hsl(' + (n * 3 % 360) + ',70%,50%)'; x.fillRect(0, 0, c.width, c.height);
      x.fillStyle = '#fff'; x.font = '120px sans-serif'; x.fillText(String(n), 80 + (n * 7) % (c.width - 400), 200 + (n * 3) % (c.height - 300));
      requestAnimationFrame(f); })();
  </script>`);
});
await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
const pageUrl = (p: string) => `http://127.0.0.1:${(pages.address() as AddressInfo).port}${p}`;

interface Sample {
  fps: number;
  latencies: number[];
}

/** Frames a live-view client receives in `seconds`, with their latency. */
async function liveView(liveViewUrl: string, seconds: number): Promise<Sample> {
  const html = await (await fetch(liveViewUrl)).text();
  const m = /<meta name="live-view-websocket" content="([^"]+)">/.exec(html)!;
  const url = new URL(m[1]!.replace(/&#38;/g, '&'), liveViewUrl);
  url.protocol = 'ws:';
  const ws = new WebSocket(url);
  const latencies: number[] = [];
  let counting = false;
  ws.on('message', (data, binary) => {
    if (!binary || !counting) return;
    const buf = data as Buffer;
    const meta = JSON.parse(buf.subarray(4, 4 + buf.readUInt32BE(0)).toString()) as { ts: number };
    latencies.push(Date.now() - meta.ts);
  });
  await new Promise((r) => ws.once('open', r));
  await sleep(1_000); // the screencast starts
  counting = true;
  await sleep(seconds * 1000);
  counting = false;
  ws.close();
  return { fps: latencies.length / seconds, latencies };
}

/** The same, from a screencast a client starts itself over the session's cdp_url. */
async function rawScreencast(cdpUrl: string, seconds: number): Promise<Sample> {
  const cdp = await CdpClient.connect(cdpUrl);
  const page = (await listPages(cdp)).find((p) => p.url.includes('/animate'))!;
  const { sessionId } = await cdp.send<{ sessionId: string }>('Target.attachToTarget', { targetId: page.targetId, flatten: true });
  const latencies: number[] = [];
  let counting = false;
  cdp.on((method, params, sid) => {
    if (method !== 'Page.screencastFrame' || sid !== sessionId) return;
    cdp.send('Page.screencastFrameAck', { sessionId: params.sessionId }, sessionId).catch(() => {});
    if (counting) latencies.push(Date.now() - params.metadata.timestamp * 1000);
  });
  await cdp.send(
    'Page.startScreencast',
    { format: 'jpeg', quality: QUALITY, maxWidth: VIEWPORT.width, maxHeight: VIEWPORT.height, everyNthFrame: 1 },
    sessionId,
  );
  await sleep(1_000);
  counting = true;
  await sleep(seconds * 1000);
  counting = false;
  await cdp.send('Page.stopScreencast', {}, sessionId).catch(() => {});
  cdp.close();
  return { fps: latencies.length / seconds, latencies };
}

/** CPU seconds (user + system) used so far by the processes of a browser root. */
function rootCpu(rootDir: string): number {
  const tick = 100; // USER_HZ
  let total = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'latin1');
      const env = cmd.includes(rootDir) ? '' : readFileSync(`/proc/${name}/environ`, 'latin1');
      if (!cmd.includes(rootDir) && !env.includes(`TMPDIR=${rootDir}/`)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += (Number(fields[11]) + Number(fields[12])) / tick; // utime, stime
    } catch {
      // gone
    }
  }
  return total;
}

/** Percent of one core used by a session's browser and by this process over `seconds`. */
async function cpuOf(server: TestServer, sessionId: string, seconds: number): Promise<{ browser: number; server: number }> {
  const root = rootOf(browsersDirFor(server.dataDir), sessionId).dir;
  await sleep(1_500); // settle after start
  const b0 = rootCpu(root);
  const s0 = process.cpuUsage();
  const t0 = performance.now();
  await sleep(seconds * 1000);
  const wall = (performance.now() - t0) / 1000;
  const s1 = process.cpuUsage(s0);
  return { browser: ((rootCpu(root) - b0) / wall) * 100, server: ((s1.user + s1.system) / 1e6 / wall) * 100 };
}

const fmt = (s: Sample) => `${s.fps.toFixed(1)} fps, latency p50 ${percentile(s.latencies, 50).toFixed(0)} ms p95 ${percentile(s.latencies, 95).toFixed(0)} ms`;
const merge = (xs: Sample[]): Sample => ({ fps: xs.reduce((a, s) => a + s.fps, 0) / xs.length, latencies: xs.flatMap((s) => s.latencies) });

console.log(
  `bench/liveview on ${machine()}; load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} at start`,
);
console.log(`headful sessions, ${VIEWPORT.width}x${VIEWPORT.height}, JPEG quality ${QUALITY}, ${SECONDS} s a measurement, ${ROUNDS} rounds`);

const server = await startTestServer({ env: { LOG_LEVEL: 'warn', SCREENCAST_QUALITY: String(QUALITY), MAX_CONCURRENT_BROWSERS: '2' } });
try {
  // 1. Live view vs raw screencast, alternating, one session.
  const s = await createSession(server, {
    session: { initial_url: pageUrl('/animate'), recording: { active: false }, timeout: { idle_timeout: 10 } },
    browser: { viewport: VIEWPORT },
  });
  const ours: Sample[] = [];
  const raw: Sample[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    ours.push(await liveView(s.live_view_url, SECONDS));
    raw.push(await rawScreencast(s.cdp_url, SECONDS));
    process.stderr.write(`  round ${i + 1}/${ROUNDS}: live view ${fmt(ours[i]!)} | raw ${fmt(raw[i]!)}\n`);
  }
  const o = merge(ours);
  const r = merge(raw);
  console.log(`live view client: ${fmt(o)}`);
  console.log(`raw CDP screencast: ${fmt(r)}`);
  console.log(
    `ratio: fps ${(o.fps / r.fps).toFixed(2)}x of raw, latency p50 +${(percentile(o.latencies, 50) - percentile(r.latencies, 50)).toFixed(0)} ms over raw`,
  );
  await server.request(`/v1/sessions/${s.id}`, { method: 'DELETE' });

  // 2. CPU. An idle session (a still page, not recorded); then one animated session,
  // recording and paused in turn (a paused recording with nobody watching stops the
  // screencast), so the difference is the recording alone; then its encoding.
  const avg = (xs: { browser: number; server: number }[], k: 'browser' | 'server') => xs.reduce((a, v) => a + v[k], 0) / xs.length;
  const line = (label: string, xs: { browser: number; server: number }[]) =>
    `${label}: browser ${avg(xs, 'browser').toFixed(1)}% + server ${avg(xs, 'server').toFixed(1)}% = ${(avg(xs, 'browser') + avg(xs, 'server')).toFixed(1)}% of a core`;
  const idleSession = await createSession(server, {
    session: { initial_url: pageUrl('/still'), recording: { active: false } },
    browser: { viewport: VIEWPORT },
  });
  const idle: { browser: number; server: number }[] = [];
  for (let i = 0; i < ROUNDS; i++) idle.push(await cpuOf(server, idleSession.id, SECONDS));
  await server.request(`/v1/sessions/${idleSession.id}`, { method: 'DELETE' });
  console.log(line('idle session (still page, not recorded)', idle));

  const rec = await createSession(server, { session: { initial_url: pageUrl('/animate'), recording: { active: true } }, browser: { viewport: VIEWPORT } });
  const recording: { browser: number; server: number }[] = [];
  const paused: { browser: number; server: number }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    recording.push(await cpuOf(server, rec.id, SECONDS));
    await server.request(`/v1/sessions/${rec.id}/recordings/pause`, { method: 'POST' });
    paused.push(await cpuOf(server, rec.id, SECONDS));
    await server.request(`/v1/sessions/${rec.id}/recordings/resume`, { method: 'POST' });
    process.stderr.write(
      `  round ${i + 1}/${ROUNDS}: recording ${(recording[i]!.browser + recording[i]!.server).toFixed(1)}%, paused ${(paused[i]!.browser + paused[i]!.server).toFixed(1)}%\n`,
    );
  }
  const ended = performance.now();
  await server.request(`/v1/sessions/${rec.id}`, { method: 'DELETE' });
  console.log(line('animated page, not recorded (paused)', paused));
  console.log(line('animated page, recorded', recording));
  const cost = avg(recording, 'browser') + avg(recording, 'server') - avg(paused, 'browser') - avg(paused, 'server');
  console.log(`recording one session costs ${cost.toFixed(1)}% of a core while its page animates (at RECORDING_FPS 10; a still page sends no frames)`);
  for (;;) {
    const list = (await (await server.request(`/v1/sessions/${rec.id}/recordings`)).json()) as {
      data: { count: number; items: { duration: number; size: number }[] };
    };
    if (list.data.count) {
      const it = list.data.items[0]!;
      console.log(
        `encoding at the end: ${it.duration.toFixed(1)} s of video (pauses cut), ${(it.size / 1e6).toFixed(2)} MB, listed ${((performance.now() - ended) / 1000).toFixed(1)} s after the DELETE`,
      );
      break;
    }
    await sleep(250);
  }
} finally {
  await server.close();
  pages.close();
}
