// The processes of one Chromium instance, read from /proc. Chromium's renderers, GPU and utility
// processes descend from the browser process (and share its process group, as Playwright starts it
// detached), but its crashpad handlers double-fork away to PID 1 in their own sessions. Every one of
// them inherits the browser's environment, whose HOME is a directory made for this browser alone:
// that entry (or the directory in a command line) is how they are found.
import { readdirSync, readFileSync } from "node:fs";

interface ProcStat {
  readonly ppid: number;
  readonly pgid: number;
  readonly state: string;
  /** Start time in clock ticks since boot: with the pid, identifies a process across pid reuse. */
  readonly startTicks: number;
}

/** A browser process: its pid and when it started, so a reused pid is never taken for it. */
export interface BrowserPid {
  readonly pid: number;
  readonly startTicks: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesised command name (which may itself contain spaces or parentheses).
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { state: f[0] ?? "?", ppid: Number(f[1]), pgid: Number(f[2]), startTicks: Number(f[19]) };
  } catch {
    return undefined;
  }
}

function readArgv(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  } catch {
    return [];
  }
}

function readEnviron(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
  } catch {
    return []; // gone, or another user's
  }
}

function allPids(): number[] {
  try {
    return readdirSync("/proc")
      .filter((n) => /^\d+$/.test(n))
      .map(Number);
  } catch {
    return []; // not Linux: nothing to report
  }
}

/** Whether `pid` exists and is not a zombie (a killed orphan may stay a zombie until init reaps it). */
export function isRunning(pid: number): boolean {
  const s = readStat(pid);
  return s !== undefined && s.state !== "Z" && s.state !== "X";
}

/** Whether `p` still runs (is not a zombie) and is the same process, not a reuse of its pid. */
export function isSameProcess(p: BrowserPid): boolean {
  const s = readStat(p.pid);
  return s !== undefined && s.state !== "Z" && s.state !== "X" && s.startTicks === p.startTicks;
}

/** The Chromium browser process started with HOME=`homeDir`, if it runs. */
export function findBrowserPid(homeDir: string): BrowserPid | undefined {
  const home = `HOME=${homeDir}`;
  for (const pid of allPids()) {
    const argv = readArgv(pid);
    // Only the browser process itself has the CDP pipe flag without a --type= of child process.
    if (!argv.includes("--remote-debugging-pipe") || argv.some((a) => a.startsWith("--type="))) continue;
    const s = readStat(pid);
    if (s && s.state !== "Z" && readEnviron(pid).includes(home)) return { pid, startTicks: s.startTicks };
  }
  return undefined;
}

/**
 * Live processes belonging to one browser: `root` and its descendants, plus any process whose
 * environment has HOME=`homeDir` or whose command line mentions `homeDir`. Sorted, deduplicated.
 */
export function browserProcesses(root: BrowserPid | undefined, homeDir: string): number[] {
  const home = `HOME=${homeDir}`;
  const children = new Map<number, number[]>();
  const found = new Set<number>();
  for (const pid of allPids()) {
    if (pid === process.pid) continue;
    const s = readStat(pid);
    if (!s || s.state === "Z" || s.state === "X") continue;
    const list = children.get(s.ppid) ?? [];
    list.push(pid);
    children.set(s.ppid, list);
    if (readEnviron(pid).includes(home) || readArgv(pid).some((a) => a.includes(homeDir))) found.add(pid);
  }
  if (root !== undefined && isSameProcess(root)) {
    const queue = [root.pid];
    const seen = new Set<number>();
    for (let pid = queue.pop(); pid !== undefined; pid = queue.pop()) {
      if (seen.has(pid)) continue;
      seen.add(pid);
      found.add(pid);
      queue.push(...(children.get(pid) ?? []));
    }
  }
  return [...found].sort((a, b) => a - b);
}

/** SIGKILLs process group `pgid` (if given) and every pid; ignores processes already gone. */
export function killAll(pids: readonly number[], pgid?: number): void {
  if (pgid !== undefined) {
    try {
      process.kill(-pgid, "SIGKILL");
    } catch {
      // group already gone
    }
  }
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}
