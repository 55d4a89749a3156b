import type { AuditEvent } from "../audit/event.js";
import { isStoreUnavailable } from "./errors.js";

// Group commit of audit rows, for both databases. Every mcp_call writes its write-ahead
// `call_started` row, then its `call` row, and each must be committed before the call goes on (the
// vendor is not reached, the result is not returned, until then). One commit per row costs a
// transaction (SQLite) or a round trip and a WAL flush (PostgreSQL) each; under concurrency the
// rows that arrive in the same turn of the event loop are committed together: the first append
// of a turn schedules the commit for the end of that turn (setImmediate, no timer, so a lone call
// commits at once) and every append until then joins it. Serial mode (PostgreSQL, where a commit
// is a round trip) keeps one commit in flight: the rows that arrive meanwhile are committed
// together right after it, in one statement. Each caller's promise settles only after the
// commit that holds its rows, or with its error.

/** Most rows one shared commit takes; past it, the next rows start the next batch. */
export const AUDIT_BATCH_MAX_ROWS = 512;

interface Waiting {
  readonly events: readonly AuditEvent[];
  resolve(): void;
  reject(err: unknown): void;
}

export interface AuditBatchOptions {
  /** One commit in flight at a time; appends made meanwhile share the next one (PostgreSQL). */
  readonly serial?: boolean;
}

/** Collects appends and commits them with `commit`, many rows in one transaction. */
export class AuditBatch {
  private pending: Waiting[] = [];
  private rows = 0;
  private scheduled = false;
  private inFlight = false;
  private readonly serial: boolean;

  /** `commit` writes all the rows in one transaction (rejecting leaves none written). */
  constructor(
    private readonly commit: (events: readonly AuditEvent[]) => Promise<void>,
    opts: AuditBatchOptions = {},
  ) {
    this.serial = opts.serial ?? false;
  }

  /** Resolves once `events` are committed; rejects with the commit's error. */
  append(events: readonly AuditEvent[]): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      if (!this.serial && this.rows + events.length > AUDIT_BATCH_MAX_ROWS && this.pending.length)
        void this.flush(this.take());
      this.pending.push({ events, resolve, reject });
      this.rows += events.length;
      // While a serial commit is in flight, its loop takes these rows as soon as it is done.
      if (!this.scheduled && !this.inFlight) {
        this.scheduled = true;
        setImmediate(this.turnEnded);
      }
    });
  }

  private readonly turnEnded = (): void => {
    this.scheduled = false;
    if (this.serial) void this.drain();
    else while (this.pending.length) void this.flush(this.take());
  };

  private async drain(): Promise<void> {
    if (this.inFlight) return;
    this.inFlight = true;
    try {
      while (this.pending.length) await this.flush(this.take());
    } finally {
      this.inFlight = false;
    }
  }

  /** The oldest appends, at most AUDIT_BATCH_MAX_ROWS rows (one larger append goes alone). */
  private take(): Waiting[] {
    let k = 0;
    let n = 0;
    while (k < this.pending.length) {
      const m = this.pending[k]!.events.length;
      if (k > 0 && n + m > AUDIT_BATCH_MAX_ROWS) break;
      n += m;
      k++;
    }
    this.rows -= n;
    return k === this.pending.length ? this.pending.splice(0) : this.pending.splice(0, k);
  }

  private async flush(batch: Waiting[]): Promise<void> {
    try {
      await this.commit(batch.length === 1 ? batch[0]!.events : batch.flatMap((w) => w.events));
      for (const w of batch) w.resolve();
    } catch (err) {
      // A held lock (already waited out), a database away, or a lone append: every caller gets the error as it is.
      if (batch.length === 1 || (err as { code?: unknown }).code === "busy" || isStoreUnavailable(err)) {
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
