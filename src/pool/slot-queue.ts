import type { Clock, Timer } from "../clock/clock.js";

/** Why a waiting call resumed: its turn at a slot, to look again (its vendor is live, or shutdown), or its time ran out. */
export type Wakeup = "turn" | "again" | "timeout";

interface Waiter {
  readonly connectionId: string;
  readonly teamId: string;
  readonly resolve: (why: Wakeup) => void;
  timer: Timer | undefined;
}

/**
 * The calls waiting for a vendor slot, in arrival order. On each change the pool reports, every
 * call whose connection's vendor is now live goes at once (it needs no slot), then the oldest
 * other call gets its turn at a slot: no call is overtaken, and none spawns while one could reuse.
 * A call whose team is at its own cap is passed over (it cannot use a slot), so one team's waiting
 * calls never hold up another team's.
 */
export class SlotQueue {
  private waiters: Waiter[] = [];
  /** Turns handed out and not yet taken up: a newcomer must not take the slot meant for them. */
  private reserved = 0;

  /**
   * `isLive(id)`: whether a vendor for that connection is live or starting (its callers need no slot);
   * `blocked(team)`: whether that team is at its cap with nothing of its own to stop (its callers cannot use a slot).
   */
  constructor(
    private readonly clock: Clock,
    private readonly isLive: (connectionId: string) => boolean,
    private readonly blocked: (teamId: string) => boolean = () => false,
  ) {}

  /** Calls waiting now. */
  get size(): number {
    return this.waiters.length;
  }

  /** Whether a call that was not handed a turn must queue behind others (calls of teams at their cap do not count). */
  get busy(): boolean {
    return this.reserved > 0 || this.waiters.some((w) => !this.blocked(w.teamId));
  }

  /** The call handed a turn is done with it (it spawned, joined, failed or queued again). */
  tookTurn(): void {
    this.reserved = Math.max(0, this.reserved - 1);
  }

  /** Whether a call for `connectionId` waits: its vendor must not be evicted. */
  hasWaiterFor(connectionId: string): boolean {
    return this.waiters.some((w) => w.connectionId === connectionId);
  }

  /**
   * Waits, at most `ms`, for a turn at a slot or a reason to look again. `front` puts a call that
   * had its turn but found no slot back at the head, ahead of later arrivals. A "turn" must be
   * given back with `tookTurn()` once the call has used it.
   */
  wait(connectionId: string, teamId: string, ms: number, front: boolean): Promise<Wakeup> {
    return new Promise((resolve) => {
      const w: Waiter = { connectionId, teamId, resolve, timer: undefined };
      w.timer = this.clock.setTimeout(() => this.release(w, "timeout"), Math.max(0, ms), { unref: true });
      if (front) this.waiters.unshift(w);
      else this.waiters.push(w);
    });
  }

  /** Something changed: calls for live vendors go, then the oldest other call looks for a slot. */
  wake(): void {
    const head =
      this.reserved === 0
        ? this.waiters.find((w) => !this.isLive(w.connectionId) && !this.blocked(w.teamId))
        : undefined;
    for (const w of [...this.waiters]) {
      if (w === head) {
        this.reserved++;
        this.release(w, "turn");
      } else if (this.isLive(w.connectionId)) this.release(w, "again");
    }
  }

  /** Wakes every call (shutdown: each then sees the pool closed). */
  wakeAll(): void {
    for (const w of [...this.waiters]) this.release(w, "again");
  }

  private release(w: Waiter, why: Wakeup): void {
    const i = this.waiters.indexOf(w);
    if (i < 0) return;
    this.waiters.splice(i, 1);
    w.timer?.cancel();
    w.resolve(why);
  }
}
