// What Chromium says on stderr at its start: the DevTools endpoint a launch waits for, and
// the end of what it said when it failed, without the noise every start prints.
import type { ChildProcess } from 'node:child_process';

/** The browser's DevTools endpoint, from the line Chromium prints once it listens; rejects after timeoutMs. */
export function waitForDevTools(child: ChildProcess, timeoutMs: number): Promise<string> {
  return new Promise((res, rej) => {
    let buffered = '';
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString();
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(buffered);
      if (m) {
        clearTimeout(timer);
        child.stderr!.off('data', onData);
        res(m[1]!);
      } else if (buffered.length > 64_000) {
        buffered = buffered.slice(-1_000);
      }
    };
    const timer = setTimeout(() => {
      child.stderr!.off('data', onData);
      rej(new Error(`Chromium did not report its DevTools endpoint within ${Math.round(timeoutMs / 1000)} s`));
    }, timeoutMs);
    child.stderr!.on('data', onData);
  });
}

/** The end of Chromium's stderr, without the D-Bus complaints every start prints. */
export function lastLines(text: string, n = 8): string {
  return text
    .trim()
    .split('\n')
    .filter((line) => !/dbus|Fontconfig/i.test(line))
    .slice(-n)
    .join('\n');
}
