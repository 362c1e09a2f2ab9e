// A frozen browser (RunningBrowser.freeze: its process group stopped with SIGSTOP) cannot
// see its server go: an unfrozen one exits when the DevTools pipe that only the server holds
// closes (launch.ts), but a stopped process reads nothing. So each group frozen at a given
// moment is told to one small shell process, started the first time a browser is frozen and
// kept for this process's life, whose input is a pipe from it: when this process ends,
// however it ends (kill -9 included), the pipe closes and the shell kills the groups still
// frozen, then exits. Without it such a browser stayed stopped until the next start's sweep.
import { spawn, type ChildProcess } from 'node:child_process';

// "+ pgid" holds a group, "- pgid" lets it go; at the end of input, every group held is killed.
const SCRIPT = `held=' '
while read -r op g; do
  case "$op" in
    +) held="$held$g " ;;
    -) case "$held" in *" $g "*) held="\${held%% $g *} \${held#* $g }" ;; esac ;;
  esac
done
for g in $held; do kill -s KILL -- "-$g" 2>/dev/null; done`;

let reaper: ChildProcess | undefined;

function tell(line: string): void {
  if (!reaper) {
    // detached: its own session, so a signal to this process's group (a terminal's Ctrl-C)
    // does not end it before this process has ended its browsers.
    reaper = spawn('/bin/sh', ['-c', SCRIPT], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
    // If it cannot run, a frozen browser is left to the sweep, as before it existed.
    reaper.on('error', () => {});
    reaper.stdin!.on('error', () => {});
    // It must not keep this process alive.
    reaper.unref();
    (reaper.stdin as unknown as { unref(): void }).unref();
  }
  reaper.stdin!.write(line);
}

/** The group `pgid` is about to be frozen: killed if this process ends before it lets it go. */
export function holdFrozen(pgid: number): void {
  tell(`+ ${pgid}\n`);
}

/** The group `pgid` is dead (killed by its close): nothing more to do for it. */
export function letGo(pgid: number): void {
  tell(`- ${pgid}\n`);
}
