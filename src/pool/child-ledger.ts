import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { killGroup } from "./group-stdio-transport.js";

/** The kernel's start time of a process (clock ticks since boot), or undefined if it is gone. */
export function processStartTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesised command name; starttime is field 22 overall.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[19]);
  } catch {
    return undefined;
  }
}

function processGroupOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
  } catch {
    return undefined;
  }
}

/** Pids of live processes in process group `pgid` started no earlier than `sinceTicks`. */
export function groupMembers(pgid: number, sinceTicks = 0): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (processGroupOf(pid) === pgid && (processStartTicks(pid) ?? -1) >= sinceTicks) out.push(pid);
  }
  return out;
}

/**
 * A record on disk of every vendor child the broker started, so that after a crash (SIGKILL of
 * the broker) the next start can kill whatever survived, and only that.
 */
export class ChildLedger {
  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  record(pid: number, connectionId: string): void {
    writeFileSync(path.join(this.dir, `${pid}.json`), JSON.stringify({ pid, startTicks: processStartTicks(pid) ?? 0, connectionId }), { mode: 0o600 });
  }

  forget(pid: number): void {
    rmSync(path.join(this.dir, `${pid}.json`), { force: true });
  }

  /** Kills the process groups of children recorded by an earlier run; returns how many processes. */
  sweep(): number {
    let killed = 0;
    for (const file of readdirSync(this.dir)) {
      if (!file.endsWith(".json")) continue;
      try {
        const rec = JSON.parse(readFileSync(path.join(this.dir, file), "utf8")) as { pid: number; startTicks: number };
        // A live process under the recorded pid that started at another time is a different
        // process (pid reuse) leading its own group: not ours. Later start ticks do not prove
        // descent: a reused pid always starts later than the child we recorded.
        const leaderStart = processStartTicks(rec.pid);
        if (Number.isInteger(rec.pid) && rec.pid > 1 && (leaderStart === undefined || leaderStart === rec.startTicks)) {
          const members = groupMembers(rec.pid, rec.startTicks);
          if (members.length) {
            killGroup(rec.pid, "SIGKILL");
            killed += members.length;
          }
        }
      } catch {
        // A torn record from a crash mid-write: nothing we can trust to kill.
      }
      rmSync(path.join(this.dir, file), { force: true });
    }
    return killed;
  }
}
