// Running the command-line tools that handle certificates (openssl, certutil, pk12util) with
// their input on stdin and a password on a pipe of its own (fd 3), never in argv, where any
// process of the machine could read it from /proc.
import { spawn } from 'node:child_process';

export interface ToolResult {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

const TIMEOUT_MS = 30_000;

export function runTool(file: string, args: string[], input: { stdin?: Buffer; password?: string } = {}): Promise<ToolResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe', 'pipe'], timeout: TIMEOUT_MS });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.stderr!.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-4_000)));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout: Buffer.concat(out), stderr }));
    // The tool may exit before reading all it was given (bad input): that is its answer.
    for (const s of [child.stdin!, child.stdio[3] as NodeJS.WritableStream]) s.on('error', () => {});
    (child.stdio[3] as NodeJS.WritableStream).end(input.password === undefined ? '' : `${input.password}\n`);
    child.stdin!.end(input.stdin ?? Buffer.alloc(0));
  });
}
