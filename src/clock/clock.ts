/** The time source every TTL, expiry, idle and timeout decision reads; tests inject a fake. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

/** The production clock: wall time. */
export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to; for tests and simulations. */
export class ManualClock implements Clock {
  constructor(private current = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.current;
  }
  /** Moves time forward by `ms` milliseconds. */
  advance(ms: number): void {
    this.current += ms;
  }
  set(ms: number): void {
    this.current = ms;
  }
}
