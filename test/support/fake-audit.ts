import type { AuditEvent, AuditQuery, AuditRecord, CallSampleQuery, CallSamples } from "../../src/audit/event.js";
import { StoreError } from "../../src/store/errors.js";
import type { AuditRepo } from "../../src/store/store.js";

/**
 * An in-memory audit repository whose database can be switched away: `down` makes every statement
 * fail as the PostgreSQL store does while its server is unreachable (StoreError `unavailable`);
 * `lostAck` commits the next append and then fails it (a connection cut after COMMIT was sent);
 * `failWith` fails appends with a given error (e.g. a held SQLite lock).
 */
export class FakeAudit implements AuditRepo {
  readonly rows: AuditEvent[] = [];
  down = false;
  lostAck = false;
  failWith: Error | undefined;

  async append(events: readonly AuditEvent[]): Promise<void> {
    if (this.failWith) throw this.failWith;
    if (this.down) throw new StoreError("unavailable", "the database is unavailable (ECONNREFUSED)");
    this.rows.push(...events);
    if (this.lostAck) {
      this.lostAck = false;
      throw new StoreError("unavailable", "the database is unavailable (Connection terminated unexpectedly)");
    }
  }

  async query(q: AuditQuery): Promise<AuditRecord[]> {
    if (this.down) throw new StoreError("unavailable", "the database is unavailable (ECONNREFUSED)");
    return this.matching(q).map((e, i): AuditRecord => ({ ...e, seq: i + 1 }));
  }

  async count(q: AuditQuery = {}): Promise<number> {
    if (this.down) throw new StoreError("unavailable", "the database is unavailable (ECONNREFUSED)");
    return this.matching(q).length;
  }

  async callSamples(q: CallSampleQuery): Promise<CallSamples> {
    if (this.down) throw new StoreError("unavailable", "the database is unavailable (ECONNREFUSED)");
    const inRange = (r: AuditEvent) =>
      r.at >= q.since && r.at < q.until && (q.teamId === undefined || r.teamId === q.teamId);
    const samples = this.rows
      .filter((r) => (r.event === "call" || r.event === "call_denied") && inRange(r))
      .reverse()
      .map((r) => ({
        at: r.at,
        event: r.event === "call" ? ("call" as const) : ("call_denied" as const),
        decision: r.decision ?? null,
        errorCode: r.errorCode ?? null,
        durationMs: r.durationMs ?? null,
      }));
    return { samples: samples.slice(0, q.limit), truncated: samples.length > q.limit };
  }

  private matching(q: AuditQuery): AuditEvent[] {
    return this.rows.filter((r) => (!q.callId || r.callId === q.callId) && (!q.event || r.event === q.event));
  }
}
