import type { AuditEvent } from "../../audit/event.js";
import type { Grant } from "../records.js";
import type { ThreadRef } from "../../domain/thread.js";
import type { GrantRepo } from "../store.js";
import { makeAuditWriter } from "./audit-repo.js";
import { DEFAULT_LOCK_WAIT, writeTx, type Db, type LockWait } from "./db.js";
import { toGrant, type GrantRow } from "../rows.js";

/** Inserts a grant unless a live one exists; runs inside the caller's transaction. */
export function insertGrantInTx(db: Db, g: Omit<Grant, "revokedAt" | "revokedBy">): Grant {
  const live = db
    .prepare("SELECT * FROM grants WHERE connection_id = ? AND borrower_user_id = ? AND team_id = ? AND channel_id = ? AND thread_ts = ? AND revoked_at IS NULL")
    .get(g.connectionId, g.borrowerUserId, g.teamId, g.channelId, g.threadTs) as GrantRow | undefined;
  if (live) return toGrant(live);
  db.prepare(`INSERT INTO grants (id, connection_id, team_id, channel_id, thread_ts, owner_user_id, borrower_user_id, service, created_at)
    VALUES (@id, @connectionId, @teamId, @channelId, @threadTs, @ownerUserId, @borrowerUserId, @service, @createdAt)`).run(g);
  return toGrant(db.prepare("SELECT * FROM grants WHERE id = ?").get(g.id) as GrantRow);
}

/** SQLite grants repository. */
export class SqliteGrantRepo implements GrantRepo {
  private readonly audit: (events: readonly AuditEvent[]) => void;
  private readonly findLiveStmt;
  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {
    this.audit = makeAuditWriter(db);
    this.findLiveStmt = db.prepare(
      "SELECT * FROM grants WHERE connection_id = ? AND borrower_user_id = ? AND team_id = ? AND channel_id = ? AND thread_ts = ? AND revoked_at IS NULL",
    );
  }
  async create(g: Omit<Grant, "revokedAt" | "revokedBy">, audit: readonly AuditEvent[]): Promise<Grant> {
    return writeTx(this.db, () => {
      const grant = insertGrantInTx(this.db, g);
      if (grant.id === g.id) this.audit(audit);
      return grant;
    }, this.wait);
  }
  async findLive(connectionId: string, borrowerUserId: string, t: ThreadRef): Promise<Grant | undefined> {
    const r = this.findLiveStmt.get(connectionId, borrowerUserId, t.teamId, t.channelId, t.threadTs) as GrantRow | undefined;
    return r ? toGrant(r) : undefined;
  }
  async get(id: string): Promise<Grant | undefined> {
    const r = this.db.prepare("SELECT * FROM grants WHERE id = ?").get(id) as GrantRow | undefined;
    return r ? toGrant(r) : undefined;
  }
  async list(f: { teamId?: string; ownerUserId?: string; borrowerUserId?: string; connectionId?: string; liveOnly?: boolean }): Promise<Grant[]> {
    const clauses: string[] = [];
    const p: Record<string, unknown> = {};
    if (f.teamId) { clauses.push("team_id = @teamId"); p.teamId = f.teamId; }
    if (f.ownerUserId) { clauses.push("owner_user_id = @owner"); p.owner = f.ownerUserId; }
    if (f.borrowerUserId) { clauses.push("borrower_user_id = @borrower"); p.borrower = f.borrowerUserId; }
    if (f.connectionId) { clauses.push("connection_id = @conn"); p.conn = f.connectionId; }
    if (f.liveOnly) clauses.push("revoked_at IS NULL");
    const where = clauses.length ? `WHERE ${clauses.join(" AND ")}` : "";
    return (this.db.prepare(`SELECT * FROM grants ${where} ORDER BY created_at, id`).all(p) as GrantRow[]).map(toGrant);
  }
  async revoke(id: string, by: string, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return writeTx(this.db, () => {
      const res = this.db.prepare("UPDATE grants SET revoked_at = ?, revoked_by = ? WHERE id = ? AND revoked_at IS NULL").run(at, by, id);
      if (res.changes === 1) this.audit(audit);
      return res.changes === 1;
    }, this.wait);
  }
}
