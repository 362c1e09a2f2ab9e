// A Debian bookworm base image with this machine's Node 20, made without any image registry:
// debootstrap from the Debian archive this machine's apt already uses, plus the running node
// binary and its npm and corepack. Kept as a tagged image (and the root file system under
// /var/cache) so that only the first `pnpm test:image` pays for it.
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { must, run } from './docker.js';

const CACHE = '/var/cache/cloud-browser-image';

/** The tag of the base for this Node version. */
export const baseTag = () => `cloud-browser-base:bookworm-slim-node${process.versions.node}`;

/** The archive URIs apt uses here for bookworm and for its security updates. */
export function aptMirrors(): { debian: string; security?: string } {
  const files = ['/etc/apt/sources.list', ...listDir('/etc/apt/sources.list.d').map((f) => join('/etc/apt/sources.list.d', f))];
  const entries: { uri: string; suites: string[] }[] = [];
  for (const f of files) {
    if (!existsSync(f)) continue;
    const text = readFileSync(f, 'utf8');
    // One-line style: deb [opts] URI SUITE COMPONENTS...
    for (const m of text.matchAll(/^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/gm)) entries.push({ uri: m[1], suites: [m[2]] });
    // deb822 style: stanzas of URIs: and Suites:.
    for (const stanza of text.split(/\n\s*\n/)) {
      const uri = /^URIs:\s*(\S+)/m.exec(stanza)?.[1];
      const suites = /^Suites:\s*(.+)$/m.exec(stanza)?.[1].trim().split(/\s+/);
      if (uri && suites && /^Types:.*\bdeb\b/m.test(stanza)) entries.push({ uri, suites });
    }
  }
  const debian = entries.find((e) => e.suites.includes('bookworm'))?.uri;
  if (!debian) throw new Error('no apt source for Debian bookworm in /etc/apt/sources.list*');
  return { debian, security: entries.find((e) => e.suites.includes('bookworm-security'))?.uri };
}

function listDir(d: string): string[] {
  return existsSync(d) ? readdirSync(d).filter((f) => f.endsWith('.list') || f.endsWith('.sources')) : [];
}

/** Why this machine cannot make the base, or undefined when it can. */
export async function cannotMakeBase(): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'debootstrap needs root';
  if ((await run('sh', ['-c', 'command -v debootstrap'])).code !== 0) return 'debootstrap is not installed (apt-get install debootstrap)';
  if (!process.versions.node.startsWith('20.')) return `this machine's Node is ${process.versions.node}, not 20`;
  return undefined;
}

/** What Debian's own slim images (and so node:20-bookworm-slim) leave out, as they say it to dpkg. */
const SLIM_EXCLUDES = `path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
`;

/** The base image's tag, made (debootstrap, then `docker import`) unless it exists. */
export async function ensureBase(log: (s: string) => void): Promise<string> {
  const tag = baseTag();
  if ((await run('docker', ['image', 'inspect', tag])).code === 0) return tag;
  const { debian, security } = aptMirrors();
  const rootfs = join(CACHE, 'bookworm');
  if (!existsSync(join(rootfs, 'etc/debian_version'))) {
    log(`debootstrap of bookworm from ${debian} (a few minutes, once)`);
    const tmp = `${rootfs}.tmp`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(CACHE, { recursive: true });
    await must('debootstrap', ['--variant=minbase', 'bookworm', tmp, debian]);
    renameSync(tmp, rootfs);
  }
  // Slim as the default base is: the image's size goal is measured on this base, so it must
  // not carry the 140 MB (documentation, translations, apt's lists) node:20-bookworm-slim has not.
  mkdirSync(join(rootfs, 'etc/dpkg/dpkg.cfg.d'), { recursive: true });
  writeFileSync(join(rootfs, 'etc/dpkg/dpkg.cfg.d/docker-slim'), SLIM_EXCLUDES);
  await must('sh', [
    '-c',
    `cd '${rootfs}' && find usr/share/doc -mindepth 1 ! -type d ! -name copyright -delete && find usr/share/doc -mindepth 1 -type d -empty -delete && ` +
      'rm -rf usr/share/groff/* usr/share/info/* usr/share/linda/* usr/share/lintian/overrides/* usr/share/locale/* usr/share/man/* var/lib/apt/lists/* var/cache/apt/*.bin',
  ]);
  const sources = [`deb ${debian} bookworm main`, `deb ${debian} bookworm-updates main`];
  if (security) sources.push(`deb ${security} bookworm-security main`);
  writeFileSync(join(rootfs, 'etc/apt/sources.list'), `${sources.join('\n')}\n`);
  // This machine's node, npm and corepack, where the node image keeps them.
  const lib = join(dirname(process.execPath), '../lib/node_modules');
  copyFileSync(process.execPath, join(rootfs, 'usr/local/bin/node'));
  for (const tool of ['npm', 'corepack']) {
    rmSync(join(rootfs, 'usr/local/lib/node_modules', tool), { recursive: true, force: true });
    cpSync(join(lib, tool), join(rootfs, 'usr/local/lib/node_modules', tool), { recursive: true });
  }
  for (const [name, target] of [
    ['npm', 'npm/bin/npm-cli.js'],
    ['npx', 'npm/bin/npx-cli.js'],
    ['corepack', 'corepack/dist/corepack.js'],
  ]) {
    rmSync(join(rootfs, 'usr/local/bin', name), { force: true });
    symlinkSync(`../lib/node_modules/${target}`, join(rootfs, 'usr/local/bin', name));
  }
  rmSync(join(rootfs, 'var/cache/apt/archives'), { recursive: true, force: true });
  mkdirSync(join(rootfs, 'var/cache/apt/archives/partial'), { recursive: true });
  log(`importing ${rootfs} as ${tag}`);
  await must('sh', [
    '-c',
    `tar -C '${rootfs}' -c . | docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change 'CMD ["node"]' - '${tag}'`,
  ]);
  return tag;
}
