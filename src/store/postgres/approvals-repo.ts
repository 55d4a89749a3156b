import type { AuditEvent } from "../../audit/event.js";
import type { Approval, Grant } from "../records.js";
import { type ApprovalRow, approvalExpiredAudit, toApproval } from "../rows.js";
import type { ApprovalRepo } from "../store.js";
import { writeAudit } from "./audit-repo.js";
import { insertGrantInTx } from "./grants-repo.js";
import type { PgDb } from "./pg-db.js";

/**
 * PostgreSQL approvals repository. Every transition is one conditional UPDATE: under READ COMMITTED
 * a second replica's UPDATE waits for the first's row lock, re-checks the condition and matches
 * nothing, so a decision or a consumption applies once however many replicas see the click.
 */
export class PgApprovalRepo implements ApprovalRepo {
  constructor(private readonly db: PgDb) {}
  async create(a: Approval, audit: readonly AuditEvent[]): Promise<void> {
    await this.db.tx(async (q) => {
      await q.query(
        `INSERT INTO approvals (id, nonce, connection_id, team_id, channel_id, thread_ts, owner_user_id, borrower_user_id, service, tool, args_hash, status, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', $12, $13)`,
        [
          a.id,
          a.nonce,
          a.connectionId,
          a.teamId,
          a.channelId,
          a.threadTs,
          a.ownerUserId,
          a.borrowerUserId,
          a.service,
          a.tool,
          a.argsHash,
          a.createdAt,
          a.expiresAt,
        ],
      );
      await writeAudit(q, audit);
    });
  }
  async get(id: string): Promise<Approval | undefined> {
    const r = (await this.db.query<ApprovalRow>("SELECT * FROM approvals WHERE id = $1", [id])).rows[0];
    return r ? toApproval(r) : undefined;
  }
  async getByNonce(nonce: string): Promise<Approval | undefined> {
    const r = (await this.db.query<ApprovalRow>("SELECT * FROM approvals WHERE nonce = $1", [nonce])).rows[0];
    return r ? toApproval(r) : undefined;
  }
  async decide(
    id: string,
    d: {
      status: "allowed_thread" | "allowed_once" | "denied";
      by: string;
      at: number;
      grant?: Omit<Grant, "revokedAt" | "revokedBy">;
    },
    audit: readonly AuditEvent[],
  ): Promise<boolean> {
    return this.db.tx(async (q) => {
      const res = await q.query(
        "UPDATE approvals SET status = $2, decided_at = $3, decided_by = $4 WHERE id = $1 AND status = 'pending' AND expires_at > $3 AND owner_user_id = $4",
        [id, d.status, d.at, d.by],
      );
      if (res.rowCount !== 1) return false;
      if (d.status === "allowed_thread" && d.grant) await insertGrantInTx(q, d.grant);
      await writeAudit(q, audit);
      return true;
    });
  }
  async consume(id: string, argsHash: string, _at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.db.tx(async (q) => {
      const res = await q.query(
        "UPDATE approvals SET status = 'consumed' WHERE id = $1 AND args_hash = $2 AND status IN ('allowed_once', 'allowed_thread')",
        [id, argsHash],
      );
      if (res.rowCount === 1) await writeAudit(q, audit);
      return res.rowCount === 1;
    });
  }
  async expire(id: string, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.db.tx(async (q) => {
      const res = await q.query(
        "UPDATE approvals SET status = 'expired', decided_at = $2 WHERE id = $1 AND status = 'pending'",
        [id, at],
      );
      if (res.rowCount === 1) await writeAudit(q, audit);
      return res.rowCount === 1;
    });
  }
  async expirePending(now: number, all = false): Promise<Approval[]> {
    return this.db.tx(async (q) => {
      // One UPDATE … RETURNING: only the rows this call moved get an audit row, whatever other replicas do.
      const rows = (
        await q.query<ApprovalRow>(
          `UPDATE approvals SET status = 'expired', decided_at = $1 WHERE status = 'pending' ${all ? "" : "AND expires_at <= $1"} RETURNING *`,
          [now],
        )
      ).rows.sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : 1));
      await writeAudit(
        q,
        rows.map((r) => approvalExpiredAudit(r, now, all ? "startup" : "reaper")),
      );
      return rows.map(toApproval);
    });
  }
  async list(filter: {
    teamId?: string;
    ownerUserId?: string;
    pendingAt?: number;
    limit: number;
  }): Promise<Approval[]> {
    const clauses: string[] = [];
    const params: unknown[] = [];
    const p = (v: unknown): string => {
      params.push(v);
      return `$${params.length}`;
    };
    if (filter.teamId !== undefined) clauses.push(`team_id = ${p(filter.teamId)}`);
    if (filter.ownerUserId !== undefined) clauses.push(`owner_user_id = ${p(filter.ownerUserId)}`);
    if (filter.pendingAt !== undefined) clauses.push(`status = 'pending' AND expires_at > ${p(filter.pendingAt)}`);
    const where = clauses.length ? `WHERE ${clauses.join(" AND ")}` : "";
    return (
      await this.db.query<ApprovalRow>(
        `SELECT * FROM approvals ${where} ORDER BY created_at DESC, id DESC LIMIT ${p(filter.limit)}`,
        params,
      )
    ).rows.map(toApproval);
  }
  async setCard(id: string, channel: string, ts: string): Promise<void> {
    await this.db.query("UPDATE approvals SET card_channel = $2, card_ts = $3 WHERE id = $1", [id, channel, ts]);
  }
}
