// `pnpm mock [--port N]`: serves openapi.yaml with Prism, answering from its examples, for
// frontend work without browsers. Prism validates requests against the contract too.
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const portAt = args.indexOf('--port');
const port = portAt >= 0 ? args[portAt + 1] : process.env.PORT ?? '4010';

const prism = spawn(
  join(root, 'node_modules', '.bin', 'prism'),
  ['mock', join(root, 'openapi.yaml'), '--host', '127.0.0.1', '--port', port, '--errors'],
  // No analytics from any dependency of Prism's.
  { stdio: 'inherit', env: { ...process.env, SCARF_ANALYTICS: 'false', DO_NOT_TRACK: '1' } },
);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => prism.kill(signal));
prism.on('exit', (code) => process.exit(code ?? 0));
