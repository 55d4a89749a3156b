import type { AuditEvent } from "../../audit/event.js";
import type { LoginSession } from "../records.js";
import { type LoginRow, toSession } from "../rows.js";
import type { LoginSessionRepo } from "../store.js";
import { writeAudit } from "./audit-repo.js";
import type { PgDb } from "./pg-db.js";

/** PostgreSQL login sessions: opening and ending are conditional updates that apply at most once. */
export class PgLoginSessionRepo implements LoginSessionRepo {
  constructor(private readonly db: PgDb) {}
  async create(
    s: Omit<LoginSession, "status" | "openedAt" | "endedAt" | "connectionId" | "viewerHash">,
    audit: readonly AuditEvent[],
  ): Promise<void> {
    await this.db.tx(async (q) => {
      await q.query(
        `INSERT INTO login_sessions (id, token_hash, team_id, user_id, service, scope, channel_id, thread_ts, status, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'minted', $9, $10)`,
        [s.id, s.tokenHash, s.teamId, s.userId, s.service, s.scope, s.channelId, s.threadTs, s.createdAt, s.expiresAt],
      );
      await writeAudit(q, audit);
    });
  }
  async get(id: string): Promise<LoginSession | undefined> {
    const r = (await this.db.query<LoginRow>("SELECT * FROM login_sessions WHERE id = $1", [id])).rows[0];
    return r ? toSession(r) : undefined;
  }
  async getByTokenHash(tokenHash: string): Promise<LoginSession | undefined> {
    const r = (await this.db.query<LoginRow>("SELECT * FROM login_sessions WHERE token_hash = $1", [tokenHash]))
      .rows[0];
    return r ? toSession(r) : undefined;
  }
  async open(
    tokenHash: string,
    viewerHash: string,
    at: number,
    flowExpiresAt: number,
    audit: readonly AuditEvent[],
  ): Promise<LoginSession | undefined> {
    return this.db.tx(async (q) => {
      const r = (
        await q.query<LoginRow>(
          "UPDATE login_sessions SET status = 'opened', opened_at = $2, viewer_hash = $3, expires_at = $4 WHERE token_hash = $1 AND status = 'minted' AND expires_at > $2 RETURNING *",
          [tokenHash, at, viewerHash, flowExpiresAt],
        )
      ).rows[0];
      if (!r) return undefined;
      await writeAudit(q, audit);
      return toSession(r);
    });
  }
  async end(
    id: string,
    status: "completed" | "cancelled" | "expired" | "failed",
    at: number,
    connectionId: string | null,
    audit: readonly AuditEvent[],
  ): Promise<boolean> {
    return this.db.tx(async (q) => {
      const res = await q.query(
        "UPDATE login_sessions SET status = $2, ended_at = $3, connection_id = $4 WHERE id = $1 AND status IN ('minted', 'opened')",
        [id, status, at, connectionId],
      );
      if (res.rowCount === 1) await writeAudit(q, audit);
      return res.rowCount === 1;
    });
  }
  async expireDue(now: number): Promise<LoginSession[]> {
    return this.db.tx(async (q) => {
      const rows = (
        await q.query<LoginRow>(
          "UPDATE login_sessions SET status = 'expired', ended_at = $1 WHERE status IN ('minted', 'opened') AND expires_at <= $1 RETURNING *",
          [now],
        )
      ).rows.sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : 1));
      await writeAudit(
        q,
        rows.map((r) => ({
          at: now,
          event: "login_refused" as const,
          teamId: r.team_id,
          callerUserId: r.user_id,
          service: r.service,
          decision: "expired",
          actor: "reaper",
        })),
      );
      return rows.map(toSession);
    });
  }
}
