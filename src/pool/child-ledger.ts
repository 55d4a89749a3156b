import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { groupMembers, killProcesses, processStartTicks } from "../proc/proc.js";

export { groupMembers, processStartTicks };

/** A ledger record as written; read back through zod (a torn or tampered file is skipped). */
const record = z
  .object({
    pid: z.number().int().min(2),
    startTicks: z.number().int().min(0),
    connectionId: z.string(),
    /** The child's private HOME: every process of the connection inherits it, detached or not. */
    home: z.string().min(2).optional(),
    uid: z.number().int().min(1).optional(),
  })
  .strict();

/** What identifies one child's processes beyond its group: its private HOME and its own uid. */
export interface ChildMarks {
  readonly home?: string;
  readonly uid?: number;
}

/**
 * A record on disk of every vendor child the broker started, so that after a crash (SIGKILL of
 * the broker) the next start can kill whatever survived, and only that.
 */
export class ChildLedger {
  /**
   * `homesUnder`: the directory holding every child's private HOME; at start-up any process whose
   * HOME lies under it is a leftover of this broker (a daemonised grandchild), recorded or not.
   */
  constructor(
    private readonly dir: string,
    private readonly homesUnder?: string,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  record(pid: number, connectionId: string, marks: ChildMarks = {}): void {
    const rec = {
      pid,
      startTicks: processStartTicks(pid) ?? 0,
      connectionId,
      ...(marks.home ? { home: marks.home } : {}),
      ...(marks.uid ? { uid: marks.uid } : {}),
    };
    writeFileSync(path.join(this.dir, `${pid}.json`), JSON.stringify(rec), { mode: 0o600 });
  }

  forget(pid: number): void {
    rmSync(path.join(this.dir, `${pid}.json`), { force: true });
  }

  /**
   * Kills everything children recorded by an earlier run left behind: their process groups, every
   * process whose HOME is (or lies under) a child's private directory, and every process of a
   * child's own uid. Returns how many processes.
   */
  sweep(): number {
    let killed = 0;
    for (const file of readdirSync(this.dir)) {
      if (!file.endsWith(".json")) continue;
      try {
        const rec = record.parse(JSON.parse(readFileSync(path.join(this.dir, file), "utf8")));
        // A live process under the recorded pid that started at another time is a different
        // process (pid reuse) leading its own group: not ours. Later start ticks do not prove
        // descent: a reused pid always starts later than the child we recorded.
        const leaderStart = processStartTicks(rec.pid);
        const sameLeader = leaderStart === undefined || leaderStart === rec.startTicks;
        // Everything of this child started after it: the start ticks bound every criterion.
        killed += killProcesses({
          sinceTicks: rec.startTicks,
          ...(sameLeader ? { pgid: rec.pid } : {}),
          ...(rec.home ? { envEntries: [`HOME=${rec.home}`] } : {}),
          ...(rec.uid ? { uid: rec.uid } : {}),
        });
      } catch {
        // A torn record from a crash mid-write: nothing we can trust to kill.
      }
      rmSync(path.join(this.dir, file), { force: true });
    }
    if (this.homesUnder) killed += killProcesses({ envPrefix: `HOME=${this.homesUnder.replace(/\/+$/, "")}/` });
    return killed;
  }
}
