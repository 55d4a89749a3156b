import type { AuditQuery, AuditRecord } from "../audit/event.js";
import type { Clock } from "../clock/clock.js";
import type { CallEventSink } from "./event-bus.js";
import { eventFromAudit } from "./lifecycle-event.js";

// The lifecycle events that have an audit row are read back from the audit log, not emitted by the
// code that wrote the row: whatever commits a row (a call path, a Slack click on another replica,
// the reaper, the CLI in another process) yields its event on every replica reading the same
// database, exactly once per replica, and a rolled-back change yields none. Each pass reads the
// rows after the last one seen. On PostgreSQL a transaction can commit a lower sequence number
// after a higher one was read (sequences are handed out before commit), so a gap in the numbers
// is re-checked for a while before it is given up as a rolled-back insert.

/** What the tail reads: the audit query of the store port. */
export interface AuditReader {
  query(q: AuditQuery): Promise<AuditRecord[]>;
}

/** Bounds of the tail. */
export interface AuditTailLimits {
  /** Rows read per query. */
  readonly pageRows: number;
  /** Queries per pass; a backlog beyond pageRows × pages waits for the next pass. */
  readonly pagesPerPass: number;
  /** Gaps in the sequence re-checked at most; past it the oldest are given up. */
  readonly maxGaps: number;
  /** How long a gap is re-checked before it counts as a rolled-back insert. */
  readonly gapMs: number;
}

/** Defaults: 500 rows a query, 10 queries a pass, 1,000 gaps for 30 s. */
export const AUDIT_TAIL_DEFAULTS: AuditTailLimits = { pageRows: 500, pagesPerPass: 10, maxGaps: 1_000, gapMs: 30_000 };

/** Reads committed audit rows in sequence order and emits the event each stands for. */
export class AuditTail {
  private cursor: number | undefined;
  /** Sequence numbers skipped over, each with when it is given up (insertion order = oldest first). */
  private readonly gaps = new Map<number, number>();

  constructor(
    private readonly audit: AuditReader,
    private readonly sink: CallEventSink,
    private readonly clock: Clock,
    private readonly limits: AuditTailLimits = AUDIT_TAIL_DEFAULTS,
  ) {}

  /** Gaps being re-checked right now. */
  get gapCount(): number {
    return this.gaps.size;
  }

  /** Starts from the newest row: history is not replayed (GET /v1/events has no replay). */
  async start(): Promise<void> {
    const [last] = await this.audit.query({ take: "latest", limit: 1 });
    this.cursor = last?.seq ?? 0;
  }

  /** One pass: re-checks the gaps, then reads what came after the cursor; returns the events emitted. */
  async poll(): Promise<number> {
    if (this.cursor === undefined) await this.start();
    let emitted = await this.recheck();
    for (let page = 0; page < this.limits.pagesPerPass; page++) {
      const rows = await this.audit.query({ afterSeq: this.cursor!, limit: this.limits.pageRows });
      for (const r of rows) emitted += this.take(r);
      if (rows.length < this.limits.pageRows) break;
    }
    return emitted;
  }

  private async recheck(): Promise<number> {
    const now = this.clock.now();
    for (const [seq, until] of this.gaps) if (until <= now) this.gaps.delete(seq);
    if (!this.gaps.size) return 0;
    const rows = await this.audit.query({ seqs: [...this.gaps.keys()], limit: this.limits.maxGaps });
    let n = 0;
    for (const r of rows) {
      if (!this.gaps.delete(r.seq)) continue;
      n += this.emit(r);
    }
    return n;
  }

  private take(r: AuditRecord): number {
    const cursor = this.cursor!;
    if (r.seq <= cursor) return 0;
    const until = this.clock.now() + this.limits.gapMs;
    // Only the last maxGaps numbers of a long gap can still be in flight worth waiting for.
    for (let s = Math.max(cursor + 1, r.seq - this.limits.maxGaps); s < r.seq; s++) this.gaps.set(s, until);
    while (this.gaps.size > this.limits.maxGaps) this.gaps.delete(this.gaps.keys().next().value!);
    this.cursor = r.seq;
    return this.emit(r);
  }

  private emit(r: AuditRecord): number {
    const e = eventFromAudit(r);
    if (!e) return 0;
    this.sink.emit(e);
    return 1;
  }
}
