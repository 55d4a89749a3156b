/** A pending timer; `cancel` is idempotent. */
export interface Timer {
  cancel(): void;
}

/** Options of a timer: `unref` lets the process exit while it is pending (background jobs). */
export interface TimerOptions {
  readonly unref?: boolean;
}

/**
 * The time source for every TTL, expiry, idle, timeout, heartbeat and poll: read time and arm
 * timers through it so tests advance a ManualClock instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Runs `fn` once after `ms` milliseconds. */
  setTimeout(fn: () => void, ms: number, opts?: TimerOptions): Timer;
  /** Runs `fn` every `ms` milliseconds until cancelled. */
  setInterval(fn: () => void, ms: number, opts?: TimerOptions): Timer;
}

function wrap(handle: NodeJS.Timeout, clear: (h: NodeJS.Timeout) => void, opts: TimerOptions | undefined): Timer {
  if (opts?.unref) handle.unref();
  return { cancel: () => clear(handle) };
}

/** The production clock: wall time and Node's timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms, opts) => wrap(setTimeout(fn, Math.max(0, ms)), clearTimeout, opts),
  setInterval: (fn, ms, opts) => wrap(setInterval(fn, Math.max(1, ms)), clearInterval, opts),
};

/** Resolves after `ms` on `clock`, or at once when `signal` aborts (never rejects). */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = (): void => {
      timer.cancel();
      resolve();
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

interface Pending {
  readonly id: number;
  due: number;
  readonly every: number | undefined;
  readonly fn: () => void;
}

/**
 * A clock that only moves when told to; for tests and simulations. Timers fire in due order as
 * time is advanced past them, each seeing `now()` equal to its due time.
 */
export class ManualClock implements Clock {
  private readonly timers = new Map<number, Pending>();
  private nextId = 1;

  constructor(private current = Date.UTC(2026, 0, 1)) {}

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    return this.arm(fn, Math.max(0, ms), undefined);
  }

  setInterval(fn: () => void, ms: number): Timer {
    return this.arm(fn, Math.max(1, ms), Math.max(1, ms));
  }

  /** Timers armed and not yet fired or cancelled. */
  pendingTimers(): number {
    return this.timers.size;
  }

  /** Moves time forward by `ms`, firing every timer that falls due, synchronously. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (let t = this.nextDue(target); t; t = this.nextDue(target)) this.fire(t);
    this.current = target;
  }

  /**
   * Moves time forward by `ms` like `advance`, letting promise chains and I/O callbacks run after
   * each timer fires (what code awaiting a timer needs to react before the next one).
   */
  async advanceAsync(ms: number): Promise<void> {
    const target = this.current + ms;
    await settle();
    for (let t = this.nextDue(target); t; t = this.nextDue(target)) {
      this.fire(t);
      await settle();
    }
    this.current = target;
    await settle();
  }

  /** Jumps to an absolute time without firing timers (a wall-clock step). */
  set(ms: number): void {
    this.current = ms;
  }

  private arm(fn: () => void, ms: number, every: number | undefined): Timer {
    const id = this.nextId++;
    this.timers.set(id, { id, due: this.current + ms, every, fn });
    return { cancel: () => void this.timers.delete(id) };
  }

  private nextDue(limit: number): Pending | undefined {
    let best: Pending | undefined;
    for (const t of this.timers.values())
      if (t.due <= limit && (!best || t.due < best.due || (t.due === best.due && t.id < best.id))) best = t;
    return best;
  }

  private fire(t: Pending): void {
    this.current = Math.max(this.current, t.due);
    if (t.every === undefined) this.timers.delete(t.id);
    else t.due += t.every;
    t.fn();
  }
}

/** Lets queued promise reactions and immediate callbacks run. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
