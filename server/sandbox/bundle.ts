// The child's bootstrap, bundled once per server process (about 50 ms) and then written
// into each run's directory: a run pays for neither esbuild nor TypeScript on its way in.
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

let bundled: Promise<string> | undefined;

export function runnerBundle(): Promise<string> {
  bundled ??= build({
    entryPoints: [fileURLToPath(new URL('./child/runner.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['playwright-core'],
    write: false,
    logLevel: 'silent',
  }).then(
    (out) => out.outputFiles[0].text,
    (err: unknown) => {
      bundled = undefined;
      throw err;
    },
  );
  return bundled;
}
