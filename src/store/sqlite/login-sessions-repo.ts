import type { AuditEvent } from "../../audit/event.js";
import type { LoginSession } from "../records.js";
import { type LoginRow, toSession } from "../rows.js";
import type { LoginSessionRepo } from "../store.js";
import { makeAuditWriter } from "./audit-repo.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait, writeTx } from "./db.js";

/** SQLite login sessions: opening and ending are conditional updates that apply at most once. */
export class SqliteLoginSessionRepo implements LoginSessionRepo {
  private readonly audit: (events: readonly AuditEvent[]) => void;
  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {
    this.audit = makeAuditWriter(db);
  }
  async create(
    s: Omit<LoginSession, "status" | "openedAt" | "endedAt" | "connectionId" | "viewerHash">,
    audit: readonly AuditEvent[],
  ): Promise<void> {
    await writeTx(
      this.db,
      () => {
        this.db
          .prepare(`INSERT INTO login_sessions (id, token_hash, team_id, user_id, service, scope, channel_id, thread_ts, status, created_at, expires_at)
          VALUES (@id, @tokenHash, @teamId, @userId, @service, @scope, @channelId, @threadTs, 'minted', @createdAt, @expiresAt)`)
          .run({ ...s });
        this.audit(audit);
      },
      this.wait,
    );
  }
  async get(id: string): Promise<LoginSession | undefined> {
    const r = this.db.prepare("SELECT * FROM login_sessions WHERE id = ?").get(id) as LoginRow | undefined;
    return r ? toSession(r) : undefined;
  }
  async getByTokenHash(tokenHash: string): Promise<LoginSession | undefined> {
    const r = this.db.prepare("SELECT * FROM login_sessions WHERE token_hash = ?").get(tokenHash) as
      | LoginRow
      | undefined;
    return r ? toSession(r) : undefined;
  }
  async open(
    tokenHash: string,
    viewerHash: string,
    at: number,
    flowExpiresAt: number,
    audit: readonly AuditEvent[],
  ): Promise<LoginSession | undefined> {
    return writeTx(
      this.db,
      () => {
        const res = this.db
          .prepare(
            "UPDATE login_sessions SET status = 'opened', opened_at = ?, viewer_hash = ?, expires_at = ? WHERE token_hash = ? AND status = 'minted' AND expires_at > ?",
          )
          .run(at, viewerHash, flowExpiresAt, tokenHash, at);
        if (res.changes !== 1) return undefined;
        this.audit(audit);
        return toSession(
          this.db.prepare("SELECT * FROM login_sessions WHERE token_hash = ?").get(tokenHash) as LoginRow,
        );
      },
      this.wait,
    );
  }
  async end(
    id: string,
    status: "completed" | "cancelled" | "expired" | "failed",
    at: number,
    connectionId: string | null,
    audit: readonly AuditEvent[],
  ): Promise<boolean> {
    return writeTx(
      this.db,
      () => {
        const res = this.db
          .prepare(
            "UPDATE login_sessions SET status = ?, ended_at = ?, connection_id = ? WHERE id = ? AND status IN ('minted', 'opened')",
          )
          .run(status, at, connectionId, id);
        if (res.changes === 1) this.audit(audit);
        return res.changes === 1;
      },
      this.wait,
    );
  }
  async expireDue(now: number): Promise<LoginSession[]> {
    return writeTx(
      this.db,
      () => {
        const rows = this.db
          .prepare("SELECT * FROM login_sessions WHERE status IN ('minted', 'opened') AND expires_at <= ?")
          .all(now) as LoginRow[];
        const upd = this.db.prepare(
          "UPDATE login_sessions SET status = 'expired', ended_at = ? WHERE id = ? AND status IN ('minted', 'opened')",
        );
        for (const r of rows) {
          upd.run(now, r.id);
          this.audit([
            {
              at: now,
              event: "login_refused",
              teamId: r.team_id,
              callerUserId: r.user_id,
              service: r.service,
              decision: "expired",
              actor: "reaper",
            },
          ]);
        }
        return rows.map((r) => toSession({ ...r, status: "expired", ended_at: now }));
      },
      this.wait,
    );
  }
}
