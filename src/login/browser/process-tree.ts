// The processes of one Chromium instance, read from /proc (through the shared reader in src/proc).
// Chromium's renderers, GPU and utility processes descend from the browser process (and share its
// process group, as Playwright starts it detached), but its crashpad handlers double-fork away to
// PID 1 in their own sessions. Every one of them inherits the browser's environment, whose HOME is a
// directory made for this browser alone: that entry (or the directory in a command line) is how
// they are found — the same marker the vendor pool uses for a connection's processes.
import {
  allPids,
  findProcesses,
  isRunning,
  isSameProcess,
  killAll,
  type ProcessRef,
  readArgv,
  readEnviron,
  readStat,
} from "../../proc/proc.js";

/** A browser process: its pid and when it started, so a reused pid is never taken for it. */
export type BrowserPid = ProcessRef;

export { isRunning, isSameProcess, killAll };

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
  return findProcesses({ envEntries: [`HOME=${homeDir}`], argvIncludes: [homeDir], ...(root ? { root } : {}) });
}
