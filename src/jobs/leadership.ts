import { errorMessage } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";

// Which replica runs the jobs that sweep the shared database (TTL reaper, result reaper, approval and
// link expiry). Each such job has a lock; the replica holding it leads that job until it gives it up
// or its hold is lost (PostgreSQL: the session advisory lock dies with the replica's connection), and
// the others try again at their next tick. Leadership saves work, it does not make anything correct:
// every sweep is a conditional UPDATE, so two replicas running one pass at once still change each row once.
// That is also why a job lock held by someone who is not a replica (another database role that read
// the key from pg_locks) does not stop the job: every replica then runs it, each tick, until it is freed.

/** A lock taken without waiting; it stays held until `release()`, or until its holder's `onLost` runs. */
export interface HeldLock {
  release(): Promise<void>;
}

/** The port under leadership: named locks one holder at a time (memory: this process; PostgreSQL: every replica). */
export interface LeaderLocks {
  /** Takes `name` if nobody holds it, else undefined. `onLost` runs if the hold ends without `release()`. */
  tryHold(name: string, onLost: (err: Error) => void): Promise<HeldLock | undefined>;
  /** When `name` is held by someone who is not one of our replicas (another database role), who; else undefined. */
  foreignHolder?(name: string): Promise<string | undefined>;
}

/** In-process locks: the single-process (SQLite) deployment, where this process always leads. */
export class MemoryLeaderLocks implements LeaderLocks {
  // Bounded by the job names, a fixed set in the code.
  private readonly held = new Set<string>();

  async tryHold(name: string): Promise<HeldLock | undefined> {
    if (this.held.has(name)) return undefined;
    this.held.add(name);
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        this.held.delete(name);
      },
    };
  }
}

/** More job names than any build has: a guard on the maps below, which are keyed by job name. */
const MAX_JOBS = 64;

/**
 * This replica's leadership of each leader-only job: `lead(job)` answers whether this replica runs its
 * pass now, taking the job's lock when it is free. Changes are logged; `status()` feeds the /metrics gauge.
 */
export class Leadership {
  private readonly held = new Map<string, HeldLock>();
  private readonly leading = new Map<string, boolean>();
  private readonly trying = new Map<string, Promise<boolean>>();
  // Bounded by MAX_JOBS: the jobs whose lock someone else holds now.
  private readonly usurped = new Set<string>();
  private closed = false;

  constructor(private readonly o: { readonly locks: LeaderLocks; readonly log: Logger }) {}

  /** Whether this replica leads `job` now; never throws (an unreachable database means "not leading"). */
  lead(job: string): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if (this.held.has(job)) return Promise.resolve(true);
    const running = this.trying.get(job);
    if (running) return running;
    if (!this.leading.has(job) && this.leading.size >= MAX_JOBS) {
      this.o.log.error("too many leader-only jobs; not leading this one", { job, max: MAX_JOBS });
      return Promise.resolve(false);
    }
    const p = this.acquire(job).finally(() => this.trying.delete(job));
    this.trying.set(job, p);
    return p;
  }

  /** Each job this replica has asked about, and whether it leads it now. */
  status(): ReadonlyMap<string, boolean> {
    return this.leading;
  }

  /** Gives up every job (shutdown): the other replicas take them over at their next tick. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.trying.values()]);
    const locks = [...this.held.entries()];
    this.held.clear();
    for (const [job, lock] of locks) {
      this.set(job, false, "released at shutdown");
      await lock.release().catch(() => {});
    }
  }

  private async acquire(job: string): Promise<boolean> {
    let lock: HeldLock | undefined;
    try {
      lock = await this.o.locks.tryHold(`job:${job}`, (err) => this.lost(job, lock, err));
    } catch (err) {
      this.o.log.warn("leadership check failed; not leading until it succeeds", { job, error: errorMessage(err) });
      this.set(job, false, "check failed");
      return false;
    }
    if (!lock) {
      const foreign = await this.o.locks.foreignHolder?.(`job:${job}`).catch(() => undefined);
      if (foreign !== undefined) {
        if (!this.usurped.has(job))
          this.o.log.error(
            "a job's lock is held by another database role, not a replica: running the job here anyway",
            { job, role: foreign },
          );
        this.usurped.add(job);
        this.set(job, true, `its lock is held by another role (${foreign})`);
        return !this.closed;
      }
      this.usurped.delete(job);
      this.set(job, false, "another replica leads it");
      return false;
    }
    this.usurped.delete(job);
    if (this.closed) {
      await lock.release().catch(() => {});
      return false;
    }
    this.held.set(job, lock);
    this.set(job, true, "lock taken");
    return true;
  }

  private lost(job: string, lock: HeldLock | undefined, err: Error): void {
    if (!lock || this.held.get(job) !== lock) return;
    this.held.delete(job);
    this.set(job, false, `lock lost: ${err.message}`);
  }

  private set(job: string, leading: boolean, why: string): void {
    const before = this.leading.get(job);
    this.leading.set(job, leading);
    if (before === leading) return;
    if (leading) this.o.log.info("leading job on this replica", { job, why });
    else if (before) this.o.log.warn("no longer leading job on this replica", { job, why });
  }
}
