// `pnpm test:image`: the container image, built and run for real (not part of `pnpm test`:
// the first build takes a quarter of an hour). Without a Docker daemon it skips, saying why.
//
// It builds a base (scripts/image/base.ts: debootstrap + this machine's Node 20, cached), the
// image on it (BASE), runs it with host networking and the seccomp profile of deploy/, waits
// for HEALTHCHECK, reads the key the first start prints, creates a session and drives it with
// Playwright over cdp_url, checks from the host that Chromium runs as the image's uid with its
// sandbox (no --no-sandbox; renderers in a user namespace of their own), then `docker stop`:
// exit 0 within the grace period, and after a start on the same volume the session reads
// ended `server_shutdown`.
import { copyFileSync, cpSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { freePort } from '../server/testing/free-port.js';
import { cannotMakeBase, ensureBase } from './image/base.js';
import { docker, must, run, until } from './image/docker.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const IMAGE = 'cloud-browser:test';
const UID = 10001;
const STOP_TIMEOUT = 30;
const log = (s: string) => console.log(`test:image: ${s}`);
const seconds = (t0: number) => ((Date.now() - t0) / 1000).toFixed(1);
let failures = 0;
const check = (ok: boolean, what: string) => {
  log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
};

async function skipReason(): Promise<string | undefined> {
  if ((await run('sh', ['-c', 'command -v docker'])).code !== 0) return 'no docker command';
  const info = await run('docker', ['info', '--format', '{{.ServerVersion}}']);
  if (info.code !== 0) return `no Docker daemon answers (${info.stderr.trim().split('\n')[0]})`;
  return cannotMakeBase();
}

async function build(base: string): Promise<void> {
  // Behind a TLS-inspecting proxy npm needs its CA (deploy/build-ca/README.md).
  const ca = `${root}deploy/build-ca/extra.pem`;
  if (process.env.SSL_CERT_FILE) copyFileSync(process.env.SSL_CERT_FILE, ca);
  const t0 = Date.now();
  try {
    await must('docker', ['build', '--network', 'host', '--build-arg', `BASE=${base}`, '-t', IMAGE, root], { echo: !!process.env.IMAGE_VERBOSE });
  } finally {
    rmSync(ca, { force: true });
  }
  const size = Number((await docker('image', 'inspect', '-f', '{{.Size}}', IMAGE)).trim());
  log(`built ${IMAGE} in ${seconds(t0)} s: ${(size / 1e6).toFixed(0)} MB uncompressed`);
  check(size < 1e9, 'the image is under 1 GB');
}

/** A page on the host for the session to load: proves the browser's network and rendering. */
async function hostPage(): Promise<{ url: string; close: () => void }> {
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<title>from the host</title><p id="p">hello</p>'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, close: () => server.close() };
}

/**
 * The container's working set in MiB: its cgroup's anonymous and shared memory (cgroup v1's
 * total_rss + total_shmem, v2's anon + shmem). Not `docker stats`, which counts the page
 * cache the image's files fill, reclaimable and so no part of what a session costs.
 */
async function memoryMiB(name: string): Promise<number> {
  const stat = await docker('exec', name, 'sh', '-c', 'cat /sys/fs/cgroup/memory/memory.stat 2>/dev/null || cat /sys/fs/cgroup/memory.stat');
  const field = (k: string) => Number(new RegExp(`^${k} (\\d+)$`, 'm').exec(stat)?.[1] ?? NaN);
  const bytes = /^total_rss /m.test(stat) ? field('total_rss') + field('total_shmem') : field('anon') + field('shmem');
  if (!Number.isFinite(bytes)) throw new Error(`memory.stat of ${name}: ${stat.slice(0, 200)}`);
  return bytes / 2 ** 20;
}

/** Lists each program or library whose linked libraries are absent (ldd's "not found"). */
const LIBRARIES_MISSING =
  'for f in /usr/bin/* /usr/local/bin/* /usr/lib/chromium/* /usr/lib/*-linux-gnu/*.so*; do ' +
  '[ -f "$f" ] && ldd "$f" 2>/dev/null | grep -q "not found" && echo "$f: $(ldd "$f" | grep "not found" | tr -s " \t" " " | head -3 | tr "\n" ",")"; done; true';

const health = async (name: string) => (await docker('inspect', '-f', '{{.State.Health.Status}}', name)).trim();
async function waitHealthy(name: string): Promise<void> {
  const t0 = Date.now();
  await until('container healthy', 420, async () => {
    // 'unhealthy' is not final: a start slower than the start period (a loaded machine) turns
    // healthy at the first check that passes.
    const h = await health(name);
    const state = (await docker('inspect', '-f', '{{.State.Status}}', name)).trim();
    if (state === 'exited') throw new Error(`exited during start: ${(await run('docker', ['logs', name])).stderr.slice(-2_000)}`);
    return h === 'healthy' ? true : undefined;
  });
  log(`healthy after ${seconds(t0)} s`);
}

/** Chromium's processes in the container, as the host sees them: host pid, uid, command line. */
async function chromiumProcesses(name: string): Promise<{ pid: number; uid: number; args: string }[]> {
  const out = await docker('top', name, '-eo', 'pid,uid,args');
  return out
    .split('\n')
    .slice(1)
    .map((l) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => !!m && /chromium/.test(m[3]))
    .map((m) => ({ pid: Number(m[1]), uid: Number(m[2]), args: m[3] }));
}

/**
 * deploy/compose.yaml as Compose reads it (`docker-compose config`), with deploy/.env.example
 * filled as its comments say. Compose cannot run here (its other images cannot be pulled);
 * scripts/deploy-compose.test.ts runs the same topology without containers.
 */
async function checkCompose(): Promise<void> {
  const compose = (await run('sh', ['-c', 'command -v docker-compose'])).code === 0 ? 'docker-compose' : undefined;
  if (!compose) return log('compose check skipped: no docker-compose command (apt-get install docker-compose)');
  const dir = mkdtempSync(join(tmpdir(), 'cb-compose-'));
  try {
    cpSync(`${root}deploy`, dir, { recursive: true });
    const env = readFileSync(join(dir, '.env.example'), 'utf8').replace(
      /^([A-Z][A-Z0-9_]*)=$/gm,
      (_, name: string) => `${name}=${randomBytes(32).toString('hex')}`,
    );
    writeFileSync(join(dir, '.env'), env);
    // From deploy/, as compose.yaml says to run it (its seccomp profile is a path from there).
    const config = await run('sh', ['-c', `cd '${dir}' && ${compose} config -q`]);
    check(config.code === 0, `deploy/compose.yaml is valid to ${compose} config${config.code ? `: ${config.stderr.trim()}` : ''}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const reason = await skipReason();
  if (reason) {
    log(`skipped: ${reason}`);
    return;
  }
  await checkCompose();
  const base = await ensureBase(log);
  log(`base ${base}`);
  await build(base);

  const port = await freePort();
  const name = `cb-test-image-${port}`;
  const page = await hostPage();
  const url = `http://127.0.0.1:${port}`;
  try {
    const args = ['run', '-d', '--name', name, '--network', 'host', '--security-opt', `seccomp=${root}deploy/seccomp-chromium.json`];
    args.push('-e', `PORT=${port}`, '-e', `PUBLIC_URL=${url}`, '-e', 'ALLOW_PRIVATE_NETWORKS=true', '-e', 'SHUTDOWN_GRACE_SECONDS=5', IMAGE);
    await docker(...args);
    await waitHealthy(name);
    const printed = (await docker('logs', name)).match(/shown only now:\s+(\S+)/);
    check(!!printed, 'the first start printed an API key');
    if (!printed) return;
    const key = printed[1];
    const idle = await memoryMiB(name);
    const headers = { 'service-api-key': key, 'content-type': 'application/json' };
    // The README's first session, as its curl sends it.
    const created = await fetch(`${url}/v1/sessions`, { method: 'POST', headers, body: '{}' });
    const session = (await created.json()) as { data: { id: string; cdp_url: string } };
    check(created.status === 200, `POST /v1/sessions answered ${created.status} ${created.status === 200 ? '' : JSON.stringify(session)}`);
    if (created.status !== 200) return;
    const browser = await chromium.connectOverCDP(session.data.cdp_url);
    const context = browser.contexts()[0];
    const tab = context.pages()[0] ?? (await context.newPage());
    await tab.goto(page.url);
    check((await tab.textContent('#p')) === 'hello', 'Playwright over cdp_url loaded a page from the host');

    // The API reference, whose Redoc the image keeps as its standalone bundle alone.
    const reference = await Promise.all(['/docs', '/docs/redoc.standalone.js'].map(async (path) => (await fetch(`${url}${path}`)).status));
    check(
      reference.every((s) => s === 200),
      `the API reference at /docs and its script answer ${reference.join(', ')}`,
    );

    // What one session costs: the figure deploy/kubernetes sizes its requests from.
    const busy = await memoryMiB(name);
    log(`memory: idle ${idle.toFixed(0)} MiB, one session (headful, recording, a page) ${busy.toFixed(0)} MiB: +${(busy - idle).toFixed(0)} MiB a session`);
    const procs = await chromiumProcesses(name);
    check(procs.length > 0, `Chromium runs in the container (${procs.length} processes)`);
    check(
      procs.every((p) => p.uid === UID),
      `every Chromium process runs as uid ${UID} (${[...new Set(procs.map((p) => p.uid))].join(', ')})`,
    );
    check(!procs.some((p) => p.args.includes('--no-sandbox')), 'no Chromium process has --no-sandbox');
    // The sandbox at work: renderers sit in a user namespace the browser process is not in.
    const ns = (pid: number) => readlinkSync(`/proc/${pid}/ns/user`);
    const main = procs.find((p) => !p.args.includes('--type='));
    const renderers = procs.filter((p) => p.args.includes('--type=renderer'));
    check(!!main && renderers.length > 0 && renderers.every((r) => ns(r.pid) !== ns(main.pid)), 'renderers run in a user namespace of their own');
    await browser.close().catch(() => {});

    const t0 = Date.now();
    await docker('stop', '-t', String(STOP_TIMEOUT), name);
    const stopped = (Date.now() - t0) / 1000;
    const code = (await docker('inspect', '-f', '{{.State.ExitCode}}', name)).trim();
    check(code === '0', `docker stop: exit code ${code}`);
    check(stopped < STOP_TIMEOUT, `docker stop took ${stopped.toFixed(1)} s (grace ${STOP_TIMEOUT} s)`);

    // The same container (and so the same volume) again: the session's record survived the stop.
    await docker('start', name);
    await waitHealthy(name);
    const after = (await (await fetch(`${url}/v1/sessions/${session.data.id}`, { headers })).json()) as { data: { status: string; end_reason: string } };
    check(after.data.end_reason === 'server_shutdown', `the session ended ${after.data.status} / ${after.data.end_reason}`);
    // Its recording, encoded by the image's own ffmpeg during the drain, plays on the host's.
    const video = await fetch(`${url}/v1/sessions/${session.data.id}/recordings/primary/fetch`, { headers });
    const mp4 = Buffer.from(await video.arrayBuffer());
    check(video.status === 200 && mp4.length > 0, `the recording: ${video.status}, ${mp4.length} bytes`);
    if (video.status === 200) {
      const file = join(tmpdir(), `${name}.mp4`);
      writeFileSync(file, mp4);
      const probe = await run('ffprobe', [
        '-v',
        'error',
        '-select_streams',
        'v:0',
        '-show_entries',
        'stream=codec_name:format=duration',
        '-of',
        'csv=p=0',
        file,
      ]);
      rmSync(file, { force: true });
      check(
        probe.code === 0 && /^h264\s+[\d.]+/m.test(probe.stdout) && Number(/([\d.]+)\s*$/.exec(probe.stdout.trim())?.[1]) > 0,
        `the recording is H.264 with a length (${probe.stdout.trim().replace(/\s+/g, ' ')})`,
      );
    }
    // Everything the image leaves out (Dockerfile, deploy/dpkg-excludes) is loaded by nothing.
    const missing = await run('docker', ['exec', name, 'sh', '-c', LIBRARIES_MISSING]);
    check(
      missing.stdout.trim() === '',
      `every program and library in the image finds its libraries${missing.stdout.trim() ? `: ${missing.stdout.trim().split('\n').slice(0, 5).join('; ')}` : ''}`,
    );
    await docker('stop', '-t', String(STOP_TIMEOUT), name);
  } finally {
    page.close();
    await run('docker', ['rm', '-f', '-v', name]);
  }
}

const t0 = Date.now();
main().then(
  () => {
    log(`${failures ? `${failures} check(s) failed` : 'all checks passed'} in ${seconds(t0)} s`);
    process.exit(failures ? 1 : 0);
  },
  (err: Error) => {
    log(`FAIL ${err.stack ?? err.message}`);
    process.exit(1);
  },
);
