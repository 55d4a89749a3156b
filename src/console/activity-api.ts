import type http from "node:http";
import { z } from "zod";
import { readActivity } from "../activity/read.js";
import { MAX_MINUTES } from "../activity/summary.js";
import type { Clock } from "../clock/clock.js";
import { sendJson } from "../server/http-server.js";
import type { AuditRepo } from "../store/store.js";
import { query } from "./http.js";

// The Activity tab's API: the console team's calls per minute by outcome and latency p50/p95 over
// the last hour, the figures `slaude-connect stats --team` prints, read from the audit log.

const activityQuery = z.object({ minutes: z.coerce.number().int().min(1).max(MAX_MINUTES).optional() }).strict();

/** What the Activity API reads. */
export interface ActivityApiDeps {
  readonly audit: Pick<AuditRepo, "callSamples">;
  readonly teamId: string;
  readonly clock: Clock;
}

/** The handler of GET /console/api/activity. */
export class ActivityApi {
  constructor(private readonly d: ActivityApiDeps) {}

  /** GET /console/api/activity[?minutes=N]: the summary of the window ending with the current minute. */
  async get(res: http.ServerResponse, url: URL): Promise<void> {
    const q = query(res, url, activityQuery);
    if (!q) return;
    const now = this.d.clock.now();
    const summary = await readActivity(this.d.audit, {
      now,
      teamId: this.d.teamId,
      ...(q.minutes ? { minutes: q.minutes } : {}),
    });
    sendJson(res, 200, { now, teamId: this.d.teamId, ...summary });
  }
}
