import type { AuditEvent } from "../../audit/event.js";
import type { ThreadRef } from "../../domain/thread.js";
import type { Grant } from "../records.js";
import type { GrantRepo } from "../store.js";
import { writeAudit } from "./audit-repo.js";
import type { PgDb, Sql } from "./pg-db.js";
import { toGrant, type GrantRow } from "../rows.js";

const FIND_LIVE = "SELECT * FROM grants WHERE connection_id = $1 AND borrower_user_id = $2 AND team_id = $3 AND channel_id = $4 AND thread_ts = $5 AND revoked_at IS NULL";

/**
 * Inserts a grant unless a live one exists (then returns that one), inside the caller's transaction.
 * ON CONFLICT on the partial unique index: two replicas applying the same decision make one grant.
 */
export async function insertGrantInTx(q: Sql, g: Omit<Grant, "revokedAt" | "revokedBy">): Promise<Grant> {
  const inserted = (
    await q.query<GrantRow>(
      `INSERT INTO grants (id, connection_id, team_id, channel_id, thread_ts, owner_user_id, borrower_user_id, service, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (connection_id, borrower_user_id, team_id, channel_id, thread_ts) WHERE revoked_at IS NULL DO NOTHING RETURNING *`,
      [g.id, g.connectionId, g.teamId, g.channelId, g.threadTs, g.ownerUserId, g.borrowerUserId, g.service, g.createdAt],
    )
  ).rows[0];
  if (inserted) return toGrant(inserted);
  return toGrant((await q.query<GrantRow>(FIND_LIVE, [g.connectionId, g.borrowerUserId, g.teamId, g.channelId, g.threadTs])).rows[0]!);
}

/** PostgreSQL grants repository. */
export class PgGrantRepo implements GrantRepo {
  constructor(private readonly db: PgDb) {}
  async create(g: Omit<Grant, "revokedAt" | "revokedBy">, audit: readonly AuditEvent[]): Promise<Grant> {
    return this.db.tx(async (q) => {
      const grant = await insertGrantInTx(q, g);
      if (grant.id === g.id) await writeAudit(q, audit);
      return grant;
    });
  }
  async findLive(connectionId: string, borrowerUserId: string, t: ThreadRef): Promise<Grant | undefined> {
    const r = (await this.db.query<GrantRow>(FIND_LIVE, [connectionId, borrowerUserId, t.teamId, t.channelId, t.threadTs])).rows[0];
    return r ? toGrant(r) : undefined;
  }
  async get(id: string): Promise<Grant | undefined> {
    const r = (await this.db.query<GrantRow>("SELECT * FROM grants WHERE id = $1", [id])).rows[0];
    return r ? toGrant(r) : undefined;
  }
  async list(f: { teamId?: string; ownerUserId?: string; borrowerUserId?: string; connectionId?: string; liveOnly?: boolean }): Promise<Grant[]> {
    const clauses: string[] = [];
    const params: unknown[] = [];
    const p = (v: unknown): string => {
      params.push(v);
      return `$${params.length}`;
    };
    if (f.teamId) clauses.push(`team_id = ${p(f.teamId)}`);
    if (f.ownerUserId) clauses.push(`owner_user_id = ${p(f.ownerUserId)}`);
    if (f.borrowerUserId) clauses.push(`borrower_user_id = ${p(f.borrowerUserId)}`);
    if (f.connectionId) clauses.push(`connection_id = ${p(f.connectionId)}`);
    if (f.liveOnly) clauses.push("revoked_at IS NULL");
    const where = clauses.length ? `WHERE ${clauses.join(" AND ")}` : "";
    return (await this.db.query<GrantRow>(`SELECT * FROM grants ${where} ORDER BY created_at, id`, params)).rows.map(toGrant);
  }
  async revoke(id: string, by: string, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.db.tx(async (q) => {
      const res = await q.query("UPDATE grants SET revoked_at = $2, revoked_by = $3 WHERE id = $1 AND revoked_at IS NULL", [id, at, by]);
      if (res.rowCount === 1) await writeAudit(q, audit);
      return res.rowCount === 1;
    });
  }
}
