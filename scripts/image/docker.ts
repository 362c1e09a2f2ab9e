// The docker CLI for scripts/test-image.ts: a command's output, or its failure with stderr.
import { spawn } from 'node:child_process';

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `command args`, piping `input` to it; `echo` streams its output to ours as it comes. */
export function run(command: string, args: string[], o: { echo?: boolean; input?: NodeJS.ReadableStream; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: [o.input ? 'pipe' : 'ignore', 'pipe', 'pipe'], env: o.env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (o.echo) process.stdout.write(d);
    });
    child.stderr!.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-20_000);
      if (o.echo) process.stderr.write(d);
    });
    if (o.input) o.input.pipe(child.stdin!);
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Like run, but a non-zero exit is an error naming the command. */
export async function must(command: string, args: string[], o: Parameters<typeof run>[2] = {}): Promise<string> {
  const r = await run(command, args, o);
  if (r.code !== 0) throw new Error(`${command} ${args.join(' ')} exited ${r.code}: ${r.stderr.trim().slice(-2_000)}`);
  return r.stdout;
}

export const docker = (...args: string[]) => must('docker', args);

/** Polls `check` until it answers something other than undefined, or throws at the deadline. */
export async function until<T>(what: string, seconds: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${seconds} s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
