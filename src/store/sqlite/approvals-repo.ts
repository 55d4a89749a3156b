import type { AuditEvent } from "../../audit/event.js";
import type { Approval, Grant } from "../records.js";
import { type ApprovalRow, approvalExpiredAudit, toApproval } from "../rows.js";
import type { ApprovalRepo } from "../store.js";
import { makeAuditWriter } from "./audit-repo.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait, writeTx } from "./db.js";
import { insertGrantInTx } from "./grants-repo.js";

/** SQLite approvals repository: every transition is a conditional UPDATE that applies at most once. */
export class SqliteApprovalRepo implements ApprovalRepo {
  private readonly audit: (events: readonly AuditEvent[]) => void;
  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {
    this.audit = makeAuditWriter(db);
  }
  async create(a: Approval, audit: readonly AuditEvent[]): Promise<void> {
    await writeTx(
      this.db,
      () => {
        this.db
          .prepare(`INSERT INTO approvals (id, nonce, connection_id, team_id, channel_id, thread_ts, owner_user_id, borrower_user_id,
        service, tool, args_hash, status, created_at, expires_at) VALUES (@id, @nonce, @connectionId, @teamId, @channelId, @threadTs,
        @ownerUserId, @borrowerUserId, @service, @tool, @argsHash, 'pending', @createdAt, @expiresAt)`)
          .run({ ...a });
        this.audit(audit);
      },
      this.wait,
    );
  }
  async get(id: string): Promise<Approval | undefined> {
    const r = this.db.prepare("SELECT * FROM approvals WHERE id = ?").get(id) as ApprovalRow | undefined;
    return r ? toApproval(r) : undefined;
  }
  async getByNonce(nonce: string): Promise<Approval | undefined> {
    const r = this.db.prepare("SELECT * FROM approvals WHERE nonce = ?").get(nonce) as ApprovalRow | undefined;
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
    return writeTx(
      this.db,
      () => {
        const res = this.db
          .prepare(
            "UPDATE approvals SET status = ?, decided_at = ?, decided_by = ? WHERE id = ? AND status = 'pending' AND expires_at > ? AND owner_user_id = ?",
          )
          .run(d.status, d.at, d.by, id, d.at, d.by);
        if (res.changes !== 1) return false;
        if (d.status === "allowed_thread" && d.grant) insertGrantInTx(this.db, d.grant);
        this.audit(audit);
        return true;
      },
      this.wait,
    );
  }
  async consume(id: string, argsHash: string, _at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return writeTx(
      this.db,
      () => {
        const res = this.db
          .prepare(
            "UPDATE approvals SET status = 'consumed' WHERE id = ? AND args_hash = ? AND status IN ('allowed_once', 'allowed_thread')",
          )
          .run(id, argsHash);
        if (res.changes === 1) this.audit(audit);
        return res.changes === 1;
      },
      this.wait,
    );
  }
  async expire(id: string, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return writeTx(
      this.db,
      () => {
        const res = this.db
          .prepare("UPDATE approvals SET status = 'expired', decided_at = ? WHERE id = ? AND status = 'pending'")
          .run(at, id);
        if (res.changes === 1) this.audit(audit);
        return res.changes === 1;
      },
      this.wait,
    );
  }
  async expirePending(now: number, all = false): Promise<Approval[]> {
    return writeTx(
      this.db,
      () => {
        const rows = this.db
          .prepare(`SELECT * FROM approvals WHERE status = 'pending' ${all ? "" : "AND expires_at <= ?"}`)
          .all(...(all ? [] : [now])) as ApprovalRow[];
        const upd = this.db.prepare(
          "UPDATE approvals SET status = 'expired', decided_at = ? WHERE id = ? AND status = 'pending'",
        );
        for (const r of rows) {
          upd.run(now, r.id);
          this.audit([approvalExpiredAudit(r, now, all ? "startup" : "reaper")]);
        }
        return rows.map((r) => toApproval({ ...r, status: "expired", decided_at: now }));
      },
      this.wait,
    );
  }
  async list(filter: {
    teamId?: string;
    ownerUserId?: string;
    pendingAt?: number;
    limit: number;
  }): Promise<Approval[]> {
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (filter.teamId !== undefined) {
      where.push("team_id = ?");
      params.push(filter.teamId);
    }
    if (filter.ownerUserId !== undefined) {
      where.push("owner_user_id = ?");
      params.push(filter.ownerUserId);
    }
    if (filter.pendingAt !== undefined) {
      where.push("status = 'pending' AND expires_at > ?");
      params.push(filter.pendingAt);
    }
    const sql = `SELECT * FROM approvals ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at DESC, id DESC LIMIT ?`;
    return (this.db.prepare(sql).all(...params, filter.limit) as ApprovalRow[]).map(toApproval);
  }
  async setCard(id: string, channel: string, ts: string): Promise<void> {
    await writeTx(
      this.db,
      () => this.db.prepare("UPDATE approvals SET card_channel = ?, card_ts = ? WHERE id = ?").run(channel, ts, id),
      this.wait,
    );
  }
}
