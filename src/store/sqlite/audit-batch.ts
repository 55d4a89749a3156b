import type { AuditEvent } from "../../audit/event.js";

// Group commit of audit rows. Every mcp_call writes its write-ahead `call_started` row, then its
// `call` row, and each must be committed before the call goes on (the vendor is not reached, the
// result is not returned, until then). One transaction per row costs a BEGIN/COMMIT each; under
// concurrency the rows that arrive in the same turn of the event loop are committed together:
// the first append of a turn schedules the commit for the end of that turn (setImmediate, no
// timer, so a lone call commits at once) and every append until then joins it. Each caller's
// promise settles only after the shared transaction committed, or with its error.

/** Most rows one shared transaction takes; past it, the next rows start the next batch. */
export const AUDIT_BATCH_MAX_ROWS = 512;

interface Waiting {
  readonly events: readonly AuditEvent[];
  resolve(): void;
  reject(err: unknown): void;
}

/** Collects appends of one event-loop turn and commits them with `commit` in one transaction. */
export class AuditBatch {
  private pending: Waiting[] = [];
  private rows = 0;
  private scheduled = false;

  /** `commit` writes all the rows in one transaction (rejecting leaves none written). */
  constructor(private readonly commit: (events: readonly AuditEvent[]) => Promise<void>) {}

  /** Resolves once `events` are committed; rejects with the commit's error. */
  append(events: readonly AuditEvent[]): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      if (this.rows + events.length > AUDIT_BATCH_MAX_ROWS && this.pending.length) this.flushSoon(this.take());
      this.pending.push({ events, resolve, reject });
      this.rows += events.length;
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.flushSoon(this.take());
        });
      }
    });
  }

  private take(): Waiting[] {
    const batch = this.pending;
    this.pending = [];
    this.rows = 0;
    return batch;
  }

  private flushSoon(batch: Waiting[]): void {
    if (batch.length) void this.flush(batch);
  }

  private async flush(batch: Waiting[]): Promise<void> {
    try {
      await this.commit(batch.length === 1 ? batch[0]!.events : batch.flatMap((w) => w.events));
      for (const w of batch) w.resolve();
    } catch (err) {
      // A held lock (already waited out) or a lone append: every caller gets the error as it is.
      if (batch.length === 1 || (err as { code?: unknown }).code === "busy") {
        for (const w of batch) w.reject(err);
        return;
      }
      // One bad row must not sink the others: each append is tried alone, and fails alone.
      for (const w of batch) {
        try {
          await this.commit(w.events);
          w.resolve();
        } catch (e) {
          w.reject(e);
        }
      }
    }
  }
}
