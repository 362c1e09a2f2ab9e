// The README fits on a few screens and the rest lives in docs/, a page per subject, so
// links between them are the only way a reader finds anything: a page renamed or a
// heading reworded must not leave a link pointing at nothing. Anchors follow GitHub's
// rules, since that is where the pages are read.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? markdownFiles(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
  );
}

/** The lines outside fenced code blocks (``` or ~~~, indented ones too). */
function prose(text: string): string[] {
  const out: string[] = [];
  let fence: string | null = null;
  for (const line of text.split('\n')) {
    const m = /^\s*(`{3,}|~{3,})/.exec(line);
    if (m) {
      if (fence === null) fence = m[1][0];
      else if (m[1][0] === fence) fence = null;
      continue;
    }
    if (fence === null) out.push(line);
  }
  return out;
}

/** GitHub's anchor for a heading: lower case, punctuation removed, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a Markdown file offers, a repeated heading's getting -1, -2, … as on GitHub. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(text)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Relative link targets in prose: `[text](target)`, images too; code spans left out. */
function links(text: string): string[] {
  const out: string[] = [];
  for (const line of prose(text)) {
    const bare = line.replace(/`+[^`]*`+/g, (s) => (s.includes('](') ? ' '.repeat(s.length) : s));
    for (const m of bare.matchAll(/\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
      out.push(target);
    }
  }
  return out;
}

function broken(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const problems: string[] = [];
  for (const target of links(text)) {
    const hash = target.indexOf('#');
    const path = decodeURI(hash < 0 ? target : target.slice(0, hash));
    const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
    const to = path === '' ? file : resolve(dirname(file), path);
    if (!existsSync(to)) {
      problems.push(`${relative(root, file)}: ${target}: no such file`);
      continue;
    }
    if (anchor !== null && to.endsWith('.md') && statSync(to).isFile()) {
      if (!anchors(readFileSync(to, 'utf8')).has(anchor)) problems.push(`${relative(root, file)}: ${target}: no such heading`);
    }
  }
  return problems;
}

const readme = join(root, 'README.md');
const docs = markdownFiles(join(root, 'docs'));

describe('the docs', () => {
  it('make anchors as GitHub does', () => {
    expect(slug('Nodes: failure and drain')).toBe('nodes-failure-and-drain');
    expect(slug("Linking an end user's own account")).toBe('linking-an-end-users-own-account');
    expect(slug('`bench/rate-limits.ts`')).toBe('benchrate-limitsts');
    expect(slug('What `pnpm test` runs')).toBe('what-pnpm-test-runs');
    expect([...anchors('# A\n## B\n```sh\n# not a heading\n```\n## B\n')]).toEqual(['a', 'b', 'b-1']);
    expect(links('[a](x.md#y) [`b`](../c) [d](https://e) `[f](g)`\n```\n[h](i)\n```')).toEqual(['x.md#y', '../c']);
  });

  it('have relative links that reach a file, and a heading where they name one', () => {
    expect(docs.length).toBeGreaterThan(1);
    expect([readme, ...docs].flatMap(broken)).toEqual([]);
  });

  it('README.md fits on a few screens: at most 200 lines', () => {
    const lines = readFileSync(readme, 'utf8').replace(/\n$/, '').split('\n').length;
    expect(lines).toBeLessThanOrEqual(200);
  });

  it('docs/README.md and the README list every page of docs/', () => {
    const pages = readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md') && f !== 'README.md');
    const index = links(readFileSync(join(root, 'docs/README.md'), 'utf8'));
    const readmeLinks = links(readFileSync(readme, 'utf8'));
    for (const page of pages) {
      expect(index, `docs/README.md links ${page}`).toContain(page);
      expect(readmeLinks, `README.md links docs/${page}`).toContain(`docs/${page}`);
    }
  });
});
