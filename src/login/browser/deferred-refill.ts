// When a login that took a spare browser starts its replacement. Starting Chromium takes most of
// a core for about 700 ms; on two cores that slows the login it is replacing (input → frame went
// from ~50 to ~110 ms while a spare started). So the refill waits for the person: it starts at
// the first pause of REFILL_QUIET_MS in their input after their first input, when the login
// ends, or REFILL_BOUND_MS after the login opened, whichever comes first, and only once.
import type { Clock, Timer } from "../../clock/clock.js";

/** A pause in input long enough to start the replacement spare in. */
export const REFILL_QUIET_MS = 1_500;
/** The refill starts by then, input or not: the next login should find a spare. */
export const REFILL_BOUND_MS = 10_000;

/** Runs `fill` once: at the first quiet moment after input, at `now()`, or at the bound. */
export class DeferredRefill {
  private fill: (() => void) | undefined;
  private quiet: Timer | undefined;
  private readonly bound: Timer;

  constructor(
    fill: () => void,
    private readonly clock: Clock,
  ) {
    this.fill = fill;
    this.bound = clock.setTimeout(() => this.now(), REFILL_BOUND_MS, { unref: true });
  }

  /** The person sent input: the refill waits until they pause. */
  input(): void {
    if (!this.fill) return;
    this.quiet?.cancel();
    this.quiet = this.clock.setTimeout(() => this.now(), REFILL_QUIET_MS, { unref: true });
  }

  /** Refills now (the login ended, or a timer fired); later calls do nothing. */
  now(): void {
    const fill = this.fill;
    if (!fill) return;
    this.fill = undefined;
    this.quiet?.cancel();
    this.bound.cancel();
    fill();
  }
}
