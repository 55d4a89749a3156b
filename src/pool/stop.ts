import type { Clock } from "../clock/clock.js";
import { errorMessage } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";
import type { VendorHandle } from "./launcher.js";

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
