// Facts about live processes read from /proc (Linux), shared by the vendor pool (child ledger,
// connection sweeps) and the login browser's process tree: one reader, so both find processes the
// same way. Every reader tolerates a process vanishing mid-read and reports "gone" rather than throw.
import { readdirSync, readFileSync } from "node:fs";

/** The fields of /proc/<pid>/stat the broker uses. */
export interface ProcStat {
  readonly state: string;
  readonly ppid: number;
  readonly pgid: number;
  /** Session id: a daemonising grandchild (`setsid`) leaves its parent's session and group. */
  readonly sid: number;
  /** Start time in clock ticks since boot: with the pid, identifies a process across pid reuse. */
  readonly startTicks: number;
  /** CPU time used so far, user plus system, in clock ticks (the bench's per-call CPU cost). */
  readonly cpuTicks: number;
}

/** A process identified across pid reuse: its pid and when it started. */
export interface ProcessRef {
  readonly pid: number;
  readonly startTicks: number;
}

/** The stat fields of `pid`, or undefined if there is no such process. */
export function readStat(pid: number): ProcStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesised command name (which may itself contain spaces or parentheses).
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return {
      state: f[0] ?? "?",
      ppid: Number(f[1]),
      pgid: Number(f[2]),
      sid: Number(f[3]),
      startTicks: Number(f[19]),
      cpuTicks: Number(f[11]) + Number(f[12]),
    };
  } catch {
    return undefined;
  }
}

/**
 * The real uid of `pid` from /proc/<pid>/status, or undefined if gone. Not the owner of /proc/<pid>:
 * that turns to root when a process makes itself non-dumpable, which a vendor could use to hide.
 */
export function readUid(pid: number): number | undefined {
  try {
    const m = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m?.[1] !== undefined ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** The argv of `pid`; empty when gone or unreadable. */
export function readArgv(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  } catch {
    return [];
  }
}

/** The environment entries ("K=V") of `pid`; empty when gone or another user's. */
export function readEnviron(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
  } catch {
    return [];
  }
}

/** Every pid in /proc; empty when there is no /proc (not Linux: nothing to report). */
export function allPids(): number[] {
  try {
    return readdirSync("/proc")
      .filter((n) => /^\d+$/.test(n))
      .map(Number);
  } catch {
    return [];
  }
}

/** The kernel's start time of a process (clock ticks since boot), or undefined if it is gone. */
export function processStartTicks(pid: number): number | undefined {
  return readStat(pid)?.startTicks;
}

const live = (s: ProcStat | undefined): s is ProcStat => s !== undefined && s.state !== "Z" && s.state !== "X";

/** Whether `pid` exists and is not a zombie (a killed orphan may stay a zombie until init reaps it). */
export function isRunning(pid: number): boolean {
  return live(readStat(pid));
}

/** Whether `p` still runs (is not a zombie) and is the same process, not a reuse of its pid. */
export function isSameProcess(p: ProcessRef): boolean {
  const s = readStat(p.pid);
  return live(s) && s.startTicks === p.startTicks;
}

/** Pids of live processes in process group `pgid` started no earlier than `sinceTicks`. */
export function groupMembers(pgid: number, sinceTicks = 0): number[] {
  return allPids().filter((pid) => {
    const s = readStat(pid);
    return live(s) && s.pgid === pgid && s.startTicks >= sinceTicks;
  });
}

/** What marks the processes of one owner (a vendor connection, a login browser); any match counts. */
export interface ProcessMarker {
  /** Environment entries, e.g. `HOME=<private dir>`: inherited by every descendant, however detached. */
  readonly envEntries?: readonly string[];
  /** An environment prefix, e.g. `HOME=<run dir>/`: every private dir under one parent. */
  readonly envPrefix?: string;
  /** Substrings of any argv element (a browser's `--user-data-dir`). */
  readonly argvIncludes?: readonly string[];
  /** A uid owned by this owner alone: an unprivileged process cannot leave it. */
  readonly uid?: number;
  /** A process group (the leader's pid). */
  readonly pgid?: number;
  /**
   * Only processes started no earlier than this (the owner's first process: nothing of it is
   * older). Besides guarding against pid reuse, it spares reading the environment of every older
   * process on the host, which is most of the cost of a scan.
   */
  readonly sinceTicks?: number;
  /** A root process: it and every descendant (by ppid) while it is the same process. */
  readonly root?: ProcessRef;
}

/** Live processes (never this one) matching `m`, sorted. One pass over /proc. */
export function findProcesses(m: ProcessMarker): number[] {
  const children = new Map<number, number[]>();
  const found = new Set<number>();
  for (const pid of allPids()) {
    if (pid === process.pid) continue;
    const s = readStat(pid);
    if (!live(s)) continue;
    if (m.root) {
      const list = children.get(s.ppid) ?? [];
      list.push(pid);
      children.set(s.ppid, list);
    }
    if (s.startTicks >= (m.sinceTicks ?? 0) && matches(pid, s, m)) found.add(pid);
  }
  if (m.root && isSameProcess(m.root)) {
    const queue = [m.root.pid];
    const seen = new Set<number>();
    for (let pid = queue.pop(); pid !== undefined; pid = queue.pop()) {
      if (seen.has(pid)) continue;
      seen.add(pid);
      if (pid !== process.pid) found.add(pid);
      queue.push(...(children.get(pid) ?? []));
    }
  }
  return [...found].sort((a, b) => a - b);
}

function matches(pid: number, s: ProcStat, m: ProcessMarker): boolean {
  if (m.pgid !== undefined && s.pgid === m.pgid) return true;
  if (m.uid !== undefined && readUid(pid) === m.uid) return true;
  if (m.envEntries?.length || m.envPrefix) {
    const env = readEnviron(pid);
    if (m.envEntries?.some((e) => env.includes(e))) return true;
    if (m.envPrefix && env.some((e) => e.startsWith(m.envPrefix!))) return true;
  }
  if (m.argvIncludes?.length) {
    const argv = readArgv(pid);
    if (argv.some((a) => m.argvIncludes!.some((n) => a.includes(n)))) return true;
  }
  return false;
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

/**
 * SIGKILLs every process matching `m`, rescanning so that a process forked between a scan and the
 * kill is caught too, at most `rounds` times. Synchronous and bounded; returns how many were killed.
 */
export function killProcesses(m: ProcessMarker, rounds = 5): number {
  const killed = new Set<number>();
  for (let i = 0; i < rounds; i++) {
    const pids = findProcesses(m).filter((p) => p !== 1);
    if (pids.length === 0) break;
    // Pids only, never `-pgid`: a group id whose leader is gone may have been reused.
    killAll(pids);
    for (const p of pids) killed.add(p);
  }
  return killed.size;
}
