import type { Clock, Timer } from "../clock/clock.js";
import { errorMessage } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";
import type { AuditRepo } from "../store/store.js";
import { auditView } from "./connections-api.js";
import type { SseHub } from "./sse.js";

// The live audit tail: the server reads the audit log's newest rows on a short interval while a
// console page listens, and pushes the new ones; the page itself never polls. The audit log is
// written by every process sharing the database (CLI revocations too), so reading it is the one
// way to see them all.

/** Rows read per pass; more new rows than this in one interval are summarised by the page's reload. */
const BATCH = 200;

/** Pushes audit rows newer than the last one seen to the console's event streams. */
export class AuditTail {
  private lastSeq = 0;
  private timer: Timer | undefined;
  private busy = false;

  constructor(
    private readonly audit: AuditRepo,
    private readonly teamId: string,
    private readonly events: SseHub,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly intervalMs = 500,
  ) {}

  /** Starts watching from the current end of the log. */
  async start(): Promise<void> {
    const last = await this.audit.query({ limit: 1, take: "latest" });
    this.lastSeq = last[0]?.seq ?? 0;
    this.timer = this.clock.setInterval(() => void this.pass(), this.intervalMs, { unref: true });
  }

  /** One read: the rows after the last seen, pushed when anyone listens. */
  async pass(): Promise<void> {
    if (this.busy || this.events.size === 0) return;
    this.busy = true;
    try {
      const rows = await this.audit.query({ limit: BATCH, take: "latest" });
      const fresh = rows.filter((r) => r.seq > this.lastSeq);
      if (!fresh.length) return;
      this.lastSeq = fresh[fresh.length - 1]!.seq;
      const mine = fresh.filter((r) => r.teamId === this.teamId || r.teamId == null);
      if (mine.length) this.events.broadcast({ type: "audit", data: { rows: mine.map(auditView) } });
    } catch (err) {
      this.log.warn("console audit tail failed", { error: errorMessage(err) });
    } finally {
      this.busy = false;
    }
  }

  /** Stops watching. */
  stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
  }
}
