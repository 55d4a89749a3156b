import type { Clock } from "../clock/clock.js";
import { errorMessage } from "../domain/errors.js";
import type { CallEventSink } from "../events/event-bus.js";
import type { ChildStopReason } from "../events/lifecycle-event.js";
import { childStopped } from "../events/vendor-events.js";
import type { Logger } from "../log/logger.js";
import type { VendorHandle } from "./launcher.js";
import type { Entry, PoolEntries } from "./pool-entries.js";

/** The longest a stop (graceful or kill) of one vendor may take before the pool stops waiting for it. */
export const STOP_DEADLINE_MS = 15_000;

/** What `within` resolves with when the promise did not settle in time. */
export const LATE = Symbol("late");

/** `p`, or LATE if it has not settled within `ms` on `clock`. */
export function within<T>(clock: Clock, p: Promise<T>, ms: number): Promise<T | typeof LATE> {
  let timer: { cancel(): void } | undefined;
  const late = new Promise<typeof LATE>((r) => (timer = clock.setTimeout(() => r(LATE), ms, { unref: true })));
  return Promise.race([p, late]).finally(() => timer?.cancel());
}

/**
 * Stops one vendor within `deadlineMs` (a graceful stop that overruns is escalated to a kill);
 * never throws: a vendor that does not stop is logged and its slot released anyway.
 */
export async function stopVendor(
  o: { clock: Clock; log: Logger; deadlineMs: number },
  connectionId: string,
  handle: VendorHandle,
  how: "close" | "kill",
): Promise<void> {
  const attempt = (h: "close" | "kill") =>
    within(o.clock, h === "kill" ? handle.kill() : handle.close(), o.deadlineMs).catch((err: unknown) => {
      o.log.warn("vendor stop failed", { connectionId, error: errorMessage(err) });
      return undefined;
    });
  if ((await attempt(how)) !== LATE) return;
  o.log.warn("vendor stop overran its deadline", { connectionId, how });
  if (how === "close" && (await attempt("kill")) !== LATE) return;
  o.log.error("vendor did not stop; its slot is released anyway", { connectionId });
}

/** Stops one vendor within STOP_DEADLINE_MS (see `stopVendor`). */
export function stopWithinDeadline(
  o: { clock: Clock; log: Logger },
  connectionId: string,
  handle: VendorHandle,
  how: "close" | "kill",
): Promise<void> {
  return stopVendor({ clock: o.clock, log: o.log, deadlineMs: STOP_DEADLINE_MS }, connectionId, handle, how);
}

/** What stopping a pool entry touches. */
export interface EntryStopDeps {
  readonly clock: Clock;
  readonly log: Logger;
  readonly entries: PoolEntries;
  readonly events: CallEventSink;
  /** Queued calls look again: the entry's slot is free. */
  wake(): void;
}

/**
 * Takes `entry` out of the pool and stops its vendor (`how`), reporting its child.stopped with
 * `reason` once; its team's slot stays counted until the stop is over. A vendor still starting
 * at the deadline is killed whenever it arrives, without holding the slot.
 */
export async function stopEntry(
  d: EntryStopDeps,
  entry: Entry,
  how: "close" | "kill",
  reason: ChildStopReason,
): Promise<void> {
  d.entries.delete(entry);
  // A vendor that already went away (crashed, or stopped for its limits) was reported then.
  const report = entry.dead ? () => {} : () => d.events.emit(childStopped(entry.tag, reason, d.clock.now()));
  entry.dead = true;
  d.entries.stopStarted(entry);
  try {
    const handle =
      entry.handle ??
      (await within(
        d.clock,
        entry.ready.catch(() => undefined),
        STOP_DEADLINE_MS,
      ));
    if (handle === LATE) {
      // Still starting after the deadline: kill it whenever it arrives, without holding the slot.
      d.log.warn("vendor still starting at its stop deadline", { connectionId: entry.connectionId });
      void entry.ready.then(
        (h) => {
          report();
          return stopWithinDeadline(d, entry.connectionId, h, "kill");
        },
        () => {},
      );
    } else if (handle) {
      report();
      await stopWithinDeadline(d, entry.connectionId, handle, how);
    }
  } finally {
    d.entries.stopped(entry);
    d.wake();
  }
}
