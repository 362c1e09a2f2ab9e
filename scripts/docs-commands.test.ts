// The docs' commands and requests, run so that they cannot rot: every `curl` in a ```sh block
// of the README and docs/ is sent to a real server, in order, with the block's variables
// (`KEY`, ids, what an earlier `VAR=$(curl … | jq -r .path)` captured) filled in, and must be
// understood: an operation of the contract (no "No route"), authenticated, its body and
// parameters valid (no 400 from the contract's schemas), no 5xx. What it then does may be a
// refusal of the request's content (an id that does not exist here, a site this machine
// cannot reach): the docs show the shape of a call, and
// the pages that document each answer are tested elsewhere. Every other command must name
// something real: a `pnpm` script of package.json, a file of the tree, a documented setting.
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SETTINGS } from '../server/config/settings.js';
import { createSession, HEADLESS } from '../server/sessions/test-support.js';
import { startTestServer, type TestServer } from '../server/testing/harness.js';
import { suiteServices } from './sdk-suite.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN_TOKEN = 'docs-admin-token-0123456789abcdef0123456789';

/** The ```sh blocks of a Markdown file, each as its commands (continuations joined, comments dropped). */
export function shellBlocks(text: string): string[][] {
  const blocks: string[][] = [];
  let current: string[] | null = null;
  let pending = '';
  for (const line of text.split('\n')) {
    if (current === null) {
      if (/^```(sh|bash|shell)\s*$/.test(line)) current = [];
      continue;
    }
    if (/^```/.test(line)) {
      blocks.push(current);
      current = null;
      continue;
    }
    const code = pending && openQuote(pending) ? line : stripComment(line);
    if (code.endsWith('\\')) {
      pending += code.slice(0, -1) + ' ';
      continue;
    }
    // A quoted string that runs on to the next line (a JSON body written over several).
    if (openQuote(pending + code)) {
      pending += code + '\n';
      continue;
    }
    const command = (pending + code).trim();
    pending = '';
    if (command) current.push(command);
  }
  return blocks;
}

/** Whether a quote opened in the text is still open at its end. */
function openQuote(text: string): boolean {
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) break;
  }
  return quote !== null;
}

/** The line without a trailing `# comment` (a # outside quotes, after a space). */
function stripComment(line: string): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return line.slice(0, i).trimEnd();
  }
  return line.trimEnd();
}

/** Shell words: single quotes literal, double quotes with \" and $VAR, bare words with $VAR. */
export function words(command: string, vars: Record<string, string>): string[] {
  const out: string[] = [];
  let word: string | null = null;
  const expand = (s: string) => s.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_m, name: string) => vars[name] ?? `$${name}`);
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    if (/\s/.test(c)) {
      if (word !== null) out.push(word);
      word = null;
      continue;
    }
    word ??= '';
    if (c === "'") {
      const end = command.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unclosed quote in: ${command}`);
      word += command.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let s = '';
      for (i++; i < command.length && command[i] !== '"'; i++) s += command[i] === '\\' ? command[++i] : command[i];
      word += expand(s);
    } else {
      let s = '';
      for (; i < command.length && !/[\s'"]/.test(command[i]!); i++) s += command[i];
      i--;
      word += expand(s);
    }
  }
  if (word !== null) out.push(word);
  return out;
}

interface Curl {
  method: string;
  url: string;
  headers: Record<string, string>;
  data?: string;
  form: [string, string][];
  /** `| jq -r PATH` after it. */
  jq?: string;
}

function parseCurl(argv: string[]): Curl {
  const c: Curl = { method: '', url: '', headers: {}, form: [] };
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '|') {
      if (argv[i + 1] === 'jq') c.jq = argv.slice(i + 2).find((w) => w.startsWith('.'));
      break;
    }
    if (a === '-X') c.method = argv[++i]!;
    else if (a === '-H') {
      const [name, ...value] = argv[++i]!.split(':');
      c.headers[name!.trim().toLowerCase()] = value.join(':').trim();
    } else if (a === '-d' || a === '--data') c.data = argv[++i];
    else if (a === '-F') {
      const [name, ...value] = argv[++i]!.split('=');
      c.form.push([name!, value.join('=')]);
    } else if (!a.startsWith('-')) c.url = a;
  }
  c.method ||= c.data !== undefined || c.form.length ? 'POST' : 'GET';
  return c;
}

function markdownFiles(): string[] {
  return [
    'README.md',
    ...readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.md'))
      .map((f) => join('docs', f)),
  ];
}

const settingNames = new Set(Object.keys(SETTINGS));
const packageScripts = new Set(Object.keys((JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts));
/** Variables of the environment that are not this server's settings: the AWS SDK's. */
const FOREIGN_ENV = new Set(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY']);

describe('the commands and requests of the docs', () => {
  let services: Awaited<ReturnType<typeof suiteServices>>;
  let server: TestServer;
  let sessionId: string;

  beforeAll(async () => {
    // Configured as the pages assume an operator did: a language model, a proxy pool.
    services = await suiteServices();
    server = await startTestServer({ env: { ...services.env, ADMIN_TOKEN } });
    sessionId = (await createSession(server, HEADLESS)).id;
  });
  afterAll(async () => {
    await server?.close();
    await services?.close();
  });

  /** A block's variables before it runs: what the docs' readers have at hand. */
  const startingVars = (): Record<string, string> => {
    const base = server.url;
    return {
      KEY: server.apiKey,
      ADMIN_TOKEN,
      ADMIN_URL: base,
      ID: sessionId,
      SESSION_ID: sessionId,
      PROJECT_ID: randomUUID(),
      KEY_ID: `key_${randomUUID().replace(/-/g, '')}`,
      FILE_LINK: `${base}/v1/sessions/${sessionId}/downloads/${randomUUID()}`,
      P12_PASSPHRASE: 'passphrase',
      CODE: Buffer.from('export default async function run({ page }) { return { title: await page.title() }; }').toString('base64'),
    };
  };

  /** The placeholders written in capitals in a URL or body (SESSION_ID, RUN_ID…): a fresh id each. */
  const fill = (s: string, vars: Record<string, string>) =>
    s.replace(/https?:\/\/localhost:8080|(?<![\w/])localhost:8080/g, server.url).replace(/\b([A-Z]+_)?ID\b/g, (m) => vars[m] ?? randomUUID());

  async function send(c: Curl, vars: Record<string, string>): Promise<{ status: number; text: string }> {
    const url = new URL(fill(c.url, vars).replace(/^(?!https?:)/, 'http://'));
    let body: BodyInit | undefined;
    const headers = { ...c.headers };
    if (c.data !== undefined) body = fill(c.data, vars);
    if (c.form.length) {
      const form = new FormData();
      for (const [name, value] of c.form) {
        if (value.startsWith('@')) form.append(name, new Blob([new Uint8Array(Buffer.from(`contents of ${value.slice(1)}`))]), value.slice(1));
        else form.append(name, value);
      }
      body = form;
    }
    const res = await fetch(url, { method: c.method, headers, body });
    return { status: res.status, text: await res.text() };
  }

  for (const file of markdownFiles()) {
    const blocks = shellBlocks(readFileSync(join(root, file), 'utf8'));
    if (!blocks.some((b) => b.length)) continue;
    it(`${file}: every command names something real, every request is understood`, async () => {
      let sent = 0;
      for (const block of blocks) {
        const vars = startingVars();
        for (const command of block) {
          const assigned = /^([A-Z_]+)=\$\((.*)\)$/s.exec(command);
          const argv = words(assigned ? assigned[2]! : command, vars);
          // Settings before a command (NAME=value … pnpm start), or a file of them.
          let at = 0;
          for (; at < argv.length && /^[A-Z][A-Z0-9_]*=/.test(argv[at]!); at++) {
            const name = argv[at]!.split('=')[0]!;
            expect(settingNames.has(name) || FOREIGN_ENV.has(name), `${file}: ${name} is a documented setting`).toBe(true);
          }
          const [program, ...rest] = argv.slice(at);
          if (program === 'curl') {
            const c = parseCurl(argv.slice(at));
            const answer = await send(c, vars);
            sent++;
            const what = `${file}: ${command}\n→ ${answer.status} ${answer.text.slice(0, 300)}`;
            expect(answer.status, what).not.toBe(401);
            expect(answer.status, what).not.toBe(405);
            expect(answer.status, what).not.toBe(415);
            expect(answer.text, what).not.toContain('No route for');
            if (answer.status === 400) expect(answer.text, what).not.toMatch(/"message":"(body|query|path)\//);
            expect(answer.status, what).toBeLessThan(500);
            if (assigned && c.jq) {
              const value = c.jq
                .slice(1)
                .split('.')
                .reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], JSON.parse(answer.text));
              expect(typeof value, `${what}\n${c.jq} names a string of the answer`).toBe('string');
              vars[assigned[1]!] = value as string;
            }
          } else if (program === 'pnpm') {
            expect(packageScripts.has(rest[0]!) || ['install'].includes(rest[0]!), `${file}: pnpm ${rest[0]} is a script of package.json`).toBe(true);
          } else if (program === 'bash') {
            expect(existsSync(join(root, rest[0]!)), `${file}: ${rest[0]} exists`).toBe(true);
          }
        }
      }
      // Every curl of the page was sent (none lost to the parsing).
      expect(sent).toBe(blocks.flat().filter((c) => /(^|\$\()curl /.test(c)).length);
    });
  }
});
