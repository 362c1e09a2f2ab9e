// `pnpm adblock:lists`: refreshes the filter lists the ad-block extension carries
// (server/browser/extensions/adblock/), EasyList and EasyPrivacy as declarativeNetRequest
// rulesets. Run by a maintainer, never by the server or CI: nothing is downloaded at run time.
//
// The rulesets are the ones uBlock Origin Lite (uBOL) publishes in its repository
// uBlockOrigin/uBOL-home (chromium/rulesets/), rebuilt there from the upstream lists every day
// by uBlock Origin's maintained list compiler: each ABP filter with its options (third-party,
// domain=, resource types, path patterns) becomes DNR rules, and the ~110,000 filters of the
// two lists fold into ~12,600 rules. Only data is taken, never uBOL's code: the rulesets of the
// two lists, their regex rules (which uBOL adds at run time, and which are static rulesets
// here), and the list metadata. Redirect rules keep a neutral resource of ours where one is an
// empty file or a 1x1 GIF, and otherwise block: uBO's stand-in scripts are code.
//
//   pnpm adblock:lists                        uBOL-home's main branch, from GitHub
//   pnpm adblock:lists --ref <commit|branch>  a given version, from GitHub
//   pnpm adblock:lists --repo <dir> [--ref R] a local clone (work tree or bare), offline
//
// It writes the rulesets, sets the extension's version to uBOL's (so the browser shows which
// lists it runs), and records where they came from in lists.json (docs/adblock.md).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPOSITORY = 'uBlockOrigin/uBOL-home';
/** The lists carried, by uBOL's ruleset id. */
const LISTS = ['easylist', 'easyprivacy'] as const;
/** uBO's redirect resources that are empty or neutral files: served from neutral/. */
const NEUTRAL: Record<string, Buffer> = {
  'noop.js': Buffer.from('/* blocked by the ad-block of this browser */\n'),
  'noop.txt': Buffer.alloc(0),
  'noop.css': Buffer.alloc(0),
  'noop.json': Buffer.from('{}\n'),
  empty: Buffer.alloc(0),
  // A transparent 1x1 GIF.
  '1x1.gif': Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64'),
};
/** Chromium's limits on static rulesets (GUARANTEED_MINIMUM_STATIC_RULES, regex rules). */
const MAX_STATIC_RULES = 30_000;
const MAX_REGEX_RULES = 1_000;

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const extensionDir = join(root, 'server', 'browser', 'extensions', 'adblock');

interface Rule {
  id: number;
  priority?: number;
  action: { type: string; redirect?: { extensionPath?: string; [k: string]: unknown }; [k: string]: unknown };
  condition: Record<string, unknown>;
}

interface Source {
  commit: string;
  date: string;
  /** A file of the repository at that commit; undefined when it does not exist. */
  read(path: string): Promise<string | undefined>;
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function localSource(repo: string, ref: string): Source {
  const git = (...args: string[]) => execFileSync('git', ['-C', repo, ...args], { maxBuffer: 256 * 1024 * 1024 }).toString();
  const commit = git('rev-parse', `${ref}^{commit}`).trim();
  return {
    commit,
    date: git('show', '-s', '--format=%cI', commit).trim(),
    async read(path) {
      try {
        return git('show', `${commit}:${path}`);
      } catch {
        return undefined;
      }
    },
  };
}

async function githubSource(ref: string): Promise<Source> {
  const res = await fetch(`https://api.github.com/repos/${REPOSITORY}/commits/${encodeURIComponent(ref)}`, {
    headers: { accept: 'application/vnd.github+json', 'user-agent': 'cloud-browser adblock-lists' },
  });
  if (!res.ok) throw new Error(`GitHub answered ${res.status} for ${REPOSITORY}@${ref}`);
  const body = (await res.json()) as { sha: string; commit: { committer: { date: string } } };
  return {
    commit: body.sha,
    date: body.commit.committer.date,
    async read(path) {
      const file = await fetch(`https://raw.githubusercontent.com/${REPOSITORY}/${body.sha}/${path}`);
      if (file.status === 404) return undefined;
      if (!file.ok) throw new Error(`GitHub answered ${file.status} for ${path}`);
      return file.text();
    },
  };
}

/** One rule a line, as uBOL writes them: diffs between versions stay readable. */
function rulesetText(rules: Rule[]): string {
  return rules.length === 0 ? '[]\n' : `[\n${rules.map((r) => JSON.stringify(r)).join(',\n')}\n]\n`;
}

/** Redirects to a neutral resource of ours, or blocks where uBO's resource is code. */
function neutralize(rules: Rule[]): { rules: Rule[]; blocked: number } {
  let blocked = 0;
  const out = rules.map((rule) => {
    const path = rule.action.redirect?.extensionPath;
    if (rule.action.type !== 'redirect' || path === undefined) return rule;
    const name = path.replace(/^\/web_accessible_resources\//, '');
    if (name in NEUTRAL) return { ...rule, action: { type: 'redirect', redirect: { extensionPath: `/neutral/${name}` } } };
    blocked++;
    return { ...rule, action: { type: 'block' } };
  });
  return { rules: out, blocked };
}

function checkIds(name: string, rules: Rule[]): void {
  const ids = new Set<number>();
  for (const r of rules) {
    if (!Number.isInteger(r.id) || r.id < 1 || ids.has(r.id)) throw new Error(`${name}: rule id ${r.id} is missing, invalid or repeated`);
    ids.add(r.id);
  }
}

const ref = arg('--ref') ?? 'main';
const repo = arg('--repo');
const source = repo ? localSource(repo, ref) : await githubSource(ref);
const need = async (path: string) => {
  const text = await source.read(path);
  if (text === undefined) throw new Error(`${REPOSITORY}@${source.commit} has no ${path}`);
  return text;
};

const upstreamManifest = JSON.parse(await need('chromium/manifest.json')) as { version: string };
const details = JSON.parse(await need('chromium/rulesets/ruleset-details.json')) as {
  id: string;
  name: string;
  homeURL?: string;
  filters?: { accepted?: number };
}[];

const rulesetsDir = join(extensionDir, 'rulesets');
rmSync(rulesetsDir, { recursive: true, force: true });
mkdirSync(rulesetsDir, { recursive: true });
const lists = [];
const resources: { id: string; enabled: boolean; path: string }[] = [];
let staticRules = 0;
let regexRules = 0;
for (const id of LISTS) {
  const detail = details.find((d) => d.id === id);
  if (!detail) throw new Error(`uBOL ${upstreamManifest.version} has no ruleset ${id}`);
  const main = neutralize(JSON.parse(await need(`chromium/rulesets/main/${id}.json`)) as Rule[]);
  const regex = neutralize(JSON.parse((await source.read(`chromium/rulesets/regex/${id}.json`)) ?? '[]') as Rule[]);
  checkIds(id, main.rules);
  checkIds(`${id}-regex`, regex.rules);
  writeFileSync(join(rulesetsDir, `${id}.json`), rulesetText(main.rules));
  resources.push({ id, enabled: true, path: `rulesets/${id}.json` });
  if (regex.rules.length > 0) {
    writeFileSync(join(rulesetsDir, `${id}-regex.json`), rulesetText(regex.rules));
    resources.push({ id: `${id}-regex`, enabled: true, path: `rulesets/${id}-regex.json` });
  }
  staticRules += main.rules.length + regex.rules.length;
  regexRules += regex.rules.length;
  lists.push({
    id,
    name: detail.name,
    home: detail.homeURL ?? null,
    filters: detail.filters?.accepted ?? null,
    rules: main.rules.length + regex.rules.length,
    redirectsMadeBlocks: main.blocked + regex.blocked,
  });
}
if (staticRules > MAX_STATIC_RULES) throw new Error(`${staticRules} rules: more than Chromium enables for one extension (${MAX_STATIC_RULES})`);
if (regexRules > MAX_REGEX_RULES) throw new Error(`${regexRules} regex rules: more than Chromium allows (${MAX_REGEX_RULES})`);

const neutralDir = join(extensionDir, 'neutral');
rmSync(neutralDir, { recursive: true, force: true });
mkdirSync(neutralDir);
for (const [name, bytes] of Object.entries(NEUTRAL)) writeFileSync(join(neutralDir, name), bytes);

// The manifest is ours (its key fixes the extension id); the lists decide its rulesets and version.
const manifestPath = join(extensionDir, 'manifest.json');
const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
manifest.version = upstreamManifest.version;
manifest.declarative_net_request = { rule_resources: resources };
writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);

const record = {
  source: `https://github.com/${REPOSITORY}`,
  commit: source.commit,
  date: source.date,
  version: upstreamManifest.version,
  lists,
  licences:
    'EasyList and EasyPrivacy: dual licensed, GNU GPL 3 or Creative Commons Attribution-ShareAlike 3.0 (https://easylist.to/pages/licence.html); rulesets compiled by uBlock Origin Lite (GPL 3).',
};
writeFileSync(join(extensionDir, 'lists.json'), `${JSON.stringify(record, null, 2)}\n`);

console.log(`uBOL ${record.version} (${REPOSITORY}@${source.commit.slice(0, 12)}, ${source.date}):`);
for (const l of lists) console.log(`  ${l.name}: ${l.filters} filters → ${l.rules} rules (${l.redirectsMadeBlocks} redirects to uBO's scripts made blocks)`);
console.log(`  ${staticRules} rules in all, ${regexRules} of them regex; written to ${extensionDir}`);
