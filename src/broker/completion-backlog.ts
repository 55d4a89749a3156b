import type { AuditEvent } from "../audit/event.js";
import type { Clock, Timer } from "../clock/clock.js";
import { errorMessage } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";
import type { Metrics } from "../metrics/metrics.js";
import { isStoreUnavailable } from "../store/errors.js";
import type { AuditRepo } from "../store/store.js";

// The completion (`call`) rows of calls whose vendor already ran, when the database is away (a
// PostgreSQL restart or failover: StoreError `unavailable`). The row is kept in memory and written
// as soon as the database answers again; the call waits for that (up to `waitMs`), so a result is
// returned only once its row is committed. The backlog is bounded: past `maxRows` a row is dropped
// (logged) and its call is not answered ok, and while it is full new calls are refused before they
// reach a vendor. Any other write failure (SQLite's write lock held past the wait, a full disk) is
// not a passing outage: it is logged once and not retried, as before.

/** What became of one completion row. */
export type CompletionWrite =
  /** Committed (at once, or by a retry within the wait). */
  | "written"
  /** A failure that is not an outage: logged, not retried. */
  | "failed"
  /** The database is away: the row is queued and written once it is back, but not within the wait. */
  | "pending"
  /** The database is away and the backlog is full: the row is not kept (logged). */
  | "dropped";

/** Bounds of the backlog. */
export interface CompletionBacklogLimits {
  /** Rows kept at most; past it rows are dropped and new calls refused. */
  readonly maxRows: number;
  /** How long a call waits for its queued row to be written before it answers without its result. */
  readonly waitMs: number;
  /** The first retry's delay; doubled after each failed retry up to `maxRetryMs`. */
  readonly retryMs: number;
  readonly maxRetryMs: number;
}

/** The defaults: a few seconds' outage is waited out by the calls in flight; 1,000 rows bound the memory. */
export const DEFAULT_COMPLETION_BACKLOG: CompletionBacklogLimits = {
  maxRows: 1_000,
  waitMs: 20_000,
  retryMs: 250,
  maxRetryMs: 2_000,
};

interface Entry {
  readonly row: AuditEvent;
  readonly settle: (written: boolean) => void;
  /** The logger of the call that queued the row: its later lines carry that call's ids. */
  readonly log: Logger;
}

/** Where one process's unwritten completion rows wait for the database; see the header. */
export class CompletionBacklog {
  private readonly queue: Entry[] = [];
  private timer: Timer | undefined;
  private delay: number;
  private writing = false;
  private closed = false;

  constructor(
    private readonly d: {
      readonly repo: AuditRepo;
      readonly log: Logger;
      readonly clock: Clock;
      readonly metrics?: Pick<Metrics, "auditWriteFailed"> | undefined;
    },
    readonly limits: CompletionBacklogLimits = DEFAULT_COMPLETION_BACKLOG,
  ) {
    this.delay = limits.retryMs;
  }

  /** Rows waiting for the database. */
  get size(): number {
    return this.queue.length;
  }

  /** Whether the backlog holds its maximum: calls must not run (their completion could not be kept). */
  get full(): boolean {
    return this.queue.length >= this.limits.maxRows;
  }

  /**
   * Writes `row`; when the database is away, queues it and waits (up to `waitMs`, or until `signal`)
   * for a retry to write it. Its lines (queued, dropped, written later, not written) go to `log`,
   * the calling call's logger (its requestId and callId), the backlog's own otherwise.
   */
  async write(row: AuditEvent, signal?: AbortSignal, log: Logger = this.d.log): Promise<CompletionWrite> {
    try {
      await this.d.repo.append([row]);
      return "written";
    } catch (err) {
      if (!isStoreUnavailable(err) || this.closed) {
        this.failed(row, err, log);
        return "failed";
      }
      if (this.full) {
        this.d.metrics?.auditWriteFailed(row.event);
        log.error("audit row dropped: the database is unavailable and the completion backlog is full", {
          ...ids(row),
          backlog: this.queue.length,
          maxRows: this.limits.maxRows,
        });
        return "dropped";
      }
      let settle!: (written: boolean) => void;
      const done = new Promise<boolean>((resolve) => (settle = resolve));
      this.queue.push({ row, settle, log });
      log.warn("audit row queued: the database is unavailable", { ...ids(row), backlog: this.queue.length });
      this.schedule();
      return this.waitFor(done, signal);
    }
  }

  /** Stops retrying; rows still queued are logged by call id (they keep only their call_started row). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.timer?.cancel();
    this.timer = undefined;
    if (this.queue.length)
      this.d.log.error("audit rows not written at shutdown: the database stayed unavailable", {
        count: this.queue.length,
        callIds: this.queue
          .slice(0, 100)
          .map((e) => e.row.callId ?? "")
          .join(","),
      });
    for (const e of this.queue.splice(0)) e.settle(false);
  }

  private waitFor(done: Promise<boolean>, signal: AbortSignal | undefined): Promise<CompletionWrite> {
    return new Promise((resolve) => {
      const finish = (w: CompletionWrite): void => {
        timer.cancel();
        signal?.removeEventListener("abort", onAbort);
        resolve(w);
      };
      const onAbort = (): void => finish("pending");
      const timer = this.d.clock.setTimeout(() => finish("pending"), this.limits.waitMs, { unref: true });
      signal?.addEventListener("abort", onAbort, { once: true });
      if (signal?.aborted) onAbort();
      void done.then((written) => finish(written ? "written" : "failed"));
    });
  }

  private schedule(): void {
    if (this.timer || this.writing || this.closed || !this.queue.length) return;
    this.timer = this.d.clock.setTimeout(
      () => {
        this.timer = undefined;
        void this.retry();
      },
      this.delay,
      { unref: true },
    );
  }

  /** Writes the queued rows oldest first until one fails because the database is still away. */
  private async retry(): Promise<void> {
    this.writing = true;
    try {
      while (this.queue.length && !this.closed) {
        const head = this.queue[0]!;
        try {
          // The first attempt may have committed with its acknowledgement lost: never write a row twice.
          const there = head.row.callId
            ? (await this.d.repo.count({ callId: head.row.callId, event: head.row.event })) > 0
            : false;
          if (!there) await this.d.repo.append([head.row]);
        } catch (err) {
          if (isStoreUnavailable(err)) {
            this.delay = Math.min(this.delay * 2, this.limits.maxRetryMs);
            return;
          }
          this.queue.shift();
          this.failed(head.row, err, head.log);
          head.settle(false);
          continue;
        }
        this.queue.shift();
        this.delay = this.limits.retryMs;
        head.log.info("audit row written after the database came back", {
          ...ids(head.row),
          backlog: this.queue.length,
        });
        head.settle(true);
      }
    } finally {
      this.writing = false;
      this.schedule();
    }
  }

  private failed(row: AuditEvent, err: unknown, log: Logger): void {
    this.d.metrics?.auditWriteFailed(row.event);
    log.error("audit row not written", {
      ...ids(row),
      outcome: row.errorCode ?? "ok",
      code: (err as { code?: string }).code ?? "error",
      error: errorMessage(err),
    });
  }
}

/** The ids a log line names a row by: never arguments, results or credentials. */
function ids(row: AuditEvent): Record<string, unknown> {
  return {
    event: row.event,
    callId: row.callId ?? null,
    connectionId: row.connectionId ?? null,
    service: row.service ?? null,
    tool: row.tool ?? null,
  };
}
