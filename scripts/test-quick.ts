// `pnpm test:quick [PATH ...]`: the inner loop, in a minute or two: the type check and the
// import rules beside the tests of what changed. PATH is a folder or a file; without one,
// the files that differ from HEAD (staged, unstaged and new). A changed file brings the
// tests of its own folder (not those that merely import it: most test files start the whole
// server, so every change would bring nearly all of them). `pnpm test` is the whole suite.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const bin = (name: string) => join(root, 'node_modules', '.bin', name);

/** The files that differ from HEAD, and new files git does not ignore. */
function changedFiles(): string[] {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean);
  return [...new Set([...git('diff', '--name-only', 'HEAD'), ...git('ls-files', '--others', '--exclude-standard')])];
}

/** The test files of a folder (not below it), or the file itself if it is one. */
export function testsFor(path: string, isFolder: (p: string) => boolean, list: (dir: string) => string[]): string[] {
  const dir = isFolder(path) ? path : dirname(path);
  if (path.endsWith('.test.ts')) return [path];
  return list(dir)
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => join(dir, f));
}

function run(name: string, cmd: string, args: string[]): Promise<boolean> {
  const t = Date.now();
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, stdio: 'inherit' });
    child.on('exit', (code) => {
      console.log(`=== ${code === 0 ? 'ok' : 'FAILED'}: ${name} (${((Date.now() - t) / 1000).toFixed(1)}s)`);
      resolve(code === 0);
    });
  });
}

async function main() {
  const given = process.argv.slice(2);
  const paths = (given.length ? given : changedFiles()).filter((p) => existsSync(join(root, p)));
  const isFolder = (p: string) => statSync(join(root, p)).isDirectory();
  const tests = [...new Set(paths.flatMap((p) => testsFor(p, isFolder, (d) => readdirSync(join(root, d)))))];
  console.log(tests.length ? `tests of ${paths.length} changed or given paths: ${tests.join(' ')}` : 'no test file for the changed or given paths');
  const results = await Promise.all([
    run('type check (tsc)', bin('tsc'), ['--noEmit', '-p', '.']),
    run('import rules (dependency-cruiser)', bin('depcruise'), ['server', '--config', '.dependency-cruiser.cjs', '--output-type', 'err']),
    // The paths' formatting (files prettier ignores are skipped, not refused).
    paths.length ? run('formatting (prettier)', bin('prettier'), ['--check', '--ignore-unknown', '--log-level', 'warn', ...paths]) : Promise.resolve(true),
    tests.length ? run(`vitest (${tests.length} files)`, bin('vitest'), ['run', ...tests]) : Promise.resolve(true),
  ]);
  process.exit(results.every(Boolean) ? 0 : 1);
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) await main();
