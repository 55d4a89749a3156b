import type { AuditEvent, AuditQuery, AuditRecord } from "../../src/audit/event.js";
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

  private matching(q: AuditQuery): AuditEvent[] {
    return this.rows.filter((r) => (!q.callId || r.callId === q.callId) && (!q.event || r.event === q.event));
  }
}
