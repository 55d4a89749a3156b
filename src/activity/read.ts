import type { AuditRepo } from "../store/store.js";
import { type ActivitySummary, summarise, windowEndingAt } from "./summary.js";

// Reads one window's call rows from the audit log (one bounded statement) and summarises them.

/** Call rows read for one window at most; a busier hour is summarised from its newest rows (and says so). */
export const ACTIVITY_READ_LIMIT = 20_000;

/** What to summarise: the minutes ending with the one holding `now`, one team or all. */
export interface ActivityRequest {
  readonly now: number;
  readonly minutes?: number;
  readonly teamId?: string;
  readonly limit?: number;
}

/** The Activity figures of the window ending at `r.now`, read from `audit`. */
export async function readActivity(
  audit: Pick<AuditRepo, "callSamples">,
  r: ActivityRequest,
): Promise<ActivitySummary> {
  const w = windowEndingAt(r.now, r.minutes);
  const { samples, truncated } = await audit.callSamples({
    since: w.since,
    until: w.until,
    limit: r.limit ?? ACTIVITY_READ_LIMIT,
    ...(r.teamId === undefined ? {} : { teamId: r.teamId }),
  });
  return summarise(samples, w, truncated);
}
