import type { Clock, Timer } from "../clock/clock.js";

interface Waiter {
  readonly connectionId: string;
  readonly resolve: (woken: boolean) => void;
  timer: Timer | undefined;
}

/**
 * The calls waiting for a vendor slot, in arrival order. On each change the pool reports, every
 * call whose connection's vendor is now live goes at once (it needs no slot), then the oldest
 * other call gets its turn at a slot: no call is overtaken, and none spawns while one could reuse.
 */
export class SlotQueue {
  private waiters: Waiter[] = [];

  /** `isLive(id)`: whether a vendor for that connection is live or starting (its callers need no slot). */
  constructor(
    private readonly clock: Clock,
    private readonly isLive: (connectionId: string) => boolean,
  ) {}

  /** Calls waiting now. */
  get size(): number {
    return this.waiters.length;
  }

  /** Whether a call for `connectionId` waits: its vendor must not be evicted. */
  hasWaiterFor(connectionId: string): boolean {
    return this.waiters.some((w) => w.connectionId === connectionId);
  }

  /**
   * Waits for a turn, at most `ms`: true when woken, false when the time ran out. `front` puts a
   * call that was woken but found no slot back at the head, ahead of later arrivals.
   */
  wait(connectionId: string, ms: number, front: boolean): Promise<boolean> {
    return new Promise((resolve) => {
      const w: Waiter = { connectionId, resolve, timer: undefined };
      w.timer = this.clock.setTimeout(() => this.release(w, false), Math.max(0, ms), { unref: true });
      if (front) this.waiters.unshift(w);
      else this.waiters.push(w);
    });
  }

  /** Something changed: calls for live vendors go, then the oldest other call looks for a slot. */
  wake(): void {
    const head = this.waiters.find((w) => !this.isLive(w.connectionId));
    for (const w of [...this.waiters]) if (w === head || this.isLive(w.connectionId)) this.release(w, true);
  }

  /** Wakes every call (shutdown: each then sees the pool closed). */
  wakeAll(): void {
    for (const w of [...this.waiters]) this.release(w, true);
  }

  private release(w: Waiter, woken: boolean): void {
    const i = this.waiters.indexOf(w);
    if (i < 0) return;
    this.waiters.splice(i, 1);
    w.timer?.cancel();
    w.resolve(woken);
  }
}
