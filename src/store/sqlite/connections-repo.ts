import type { AuditEvent } from "../../audit/event.js";
import type { Connection, NewConnection } from "../records.js";
import { toConnection, ttlExpiry, type ConnectionRow } from "../rows.js";
import type { SealedSecret } from "../../vault/aead.js";
import type { CandidateQuery, CandidateRow, ConnectionFilter, ConnectionRepo, EndConnection, OwnConnectionQuery } from "../store.js";
import { ConnectionMemo } from "./connection-memo.js";
import { queryCandidates } from "./candidates-query.js";
import { makeAuditWriter } from "./audit-repo.js";
import type { Statement } from "better-sqlite3";
import { DEFAULT_LOCK_WAIT, writeTx, type Db, type LockWait } from "./db.js";

const LIVE = "status IN ('active', 'needs_login')";

/** SQLite connections repository. */
export class SqliteConnectionRepo implements ConnectionRepo {
  private readonly audit: (events: readonly AuditEvent[]) => void;
  private readonly byId;
  private readonly insert;
  private readonly endRow;
  private readonly endGrants;
  private readonly liveGrants;
  private readonly expireApprovals;
  private readonly ownRow;
  /** Rows and own-connection answers of the warm path; cleared by every write below (see connection-memo.ts). */
  readonly memo: ConnectionMemo;

  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {
    this.audit = makeAuditWriter(db);
    this.byId = db.prepare("SELECT * FROM connections WHERE id = ?");
    this.insert = db.prepare(`INSERT INTO connections (id, team_id, owner_user_id, service, scope, channel_id, thread_ts, status,
      key_id, secret_nonce, secret_ct, secret_tag, label, created_by, created_at, updated_at, expires_at)
      VALUES (@id, @teamId, @ownerUserId, @service, @scope, @channelId, @threadTs, 'active',
      @keyId, @nonce, @ct, @tag, @label, @createdBy, @createdAt, @createdAt, @expiresAt)`);
    this.endRow = db.prepare(`UPDATE connections SET status = @status, ended_at = @at, ended_reason = @reason, updated_at = @at,
      key_id = NULL, secret_nonce = NULL, secret_ct = NULL, secret_tag = NULL WHERE id = @id AND ${LIVE}`);
    this.liveGrants = db.prepare("SELECT id, team_id, channel_id, thread_ts, owner_user_id, borrower_user_id, service FROM grants WHERE connection_id = ? AND revoked_at IS NULL");
    this.endGrants = db.prepare("UPDATE grants SET revoked_at = @at, revoked_by = @by WHERE connection_id = @id AND revoked_at IS NULL");
    // The caller's own usable row: thread-scoped in this thread first, then user-scoped, then the oldest (as ownFirst).
    this.ownRow = db.prepare(`SELECT * FROM connections WHERE team_id = @team AND owner_user_id = @caller AND service = @service AND status = 'active'
      AND expires_at > @now AND ((scope = 'thread' AND channel_id = @channel AND thread_ts = @ts) OR scope = 'user')
      ORDER BY CASE scope WHEN 'thread' THEN 0 ELSE 1 END, created_at, id LIMIT 1`);
    this.memo = new ConnectionMemo(db);
    this.expireApprovals = db.prepare("UPDATE approvals SET status = 'expired', decided_at = @at WHERE connection_id = @id AND status IN ('pending', 'allowed_once', 'allowed_thread')");
  }

  private readonly statements = new Map<string, Statement<unknown[]>>();

  /** Prepared statements by SQL text (a few shapes each): candidates() is on every call's hot path. */
  private cached(sql: string): Statement<unknown[]> {
    let st = this.statements.get(sql);
    if (!st) {
      st = this.db.prepare(sql);
      this.statements.set(sql, st);
    }
    return st;
  }

  /** A write transaction on connection rows: the memo is cleared inside it, so no stale row survives it. */
  private write<T>(fn: () => T): Promise<T> {
    return writeTx(this.db, () => { this.memo.clear(); return fn(); }, this.wait);
  }

  private row(id: string): Connection | undefined {
    const r = this.byId.get(id) as ConnectionRow | undefined;
    return r ? toConnection(r) : undefined;
  }

  /** Ends one live row and everything hanging off it; must run inside a transaction. */
  private endInTx(id: string, how: EndConnection): Connection | undefined {
    const before = this.row(id);
    if (!before || (before.status !== "active" && before.status !== "needs_login")) return undefined;
    this.endRow.run({ id, status: how.status, at: how.at, reason: how.reason });
    const grants = this.liveGrants.all(id) as { id: string; team_id: string; channel_id: string; thread_ts: string; owner_user_id: string; borrower_user_id: string; service: string }[];
    this.endGrants.run({ id, at: how.at, by: how.actor });
    this.expireApprovals.run({ id, at: how.at });
    this.audit(how.audit);
    this.audit(
      grants.map((g) => ({
        at: how.at,
        event: "grant_revoked" as const,
        teamId: g.team_id,
        channelId: g.channel_id,
        threadTs: g.thread_ts,
        ownerUserId: g.owner_user_id,
        callerUserId: g.borrower_user_id,
        connectionId: id,
        service: g.service,
        decision: `connection_${how.status}`,
        actor: how.actor,
      })),
    );
    return this.row(id);
  }

  async create(c: NewConnection, audit: readonly AuditEvent[]): Promise<{ connection: Connection; replaced: Connection | null }> {
    return this.write(() => {
      const existing = this.findLiveSameKey(c);
      let replaced: Connection | null = null;
      if (existing) {
        replaced =
          this.endInTx(existing.id, {
            status: "revoked",
            reason: "replaced",
            at: c.createdAt,
            actor: c.createdBy,
            audit: [{ at: c.createdAt, event: "connection_replaced", teamId: c.teamId, ownerUserId: c.ownerUserId, connectionId: existing.id, service: c.service, actor: c.createdBy }],
          }) ?? null;
      }
      this.insert.run({
        id: c.id,
        teamId: c.teamId,
        ownerUserId: c.ownerUserId,
        service: c.service,
        scope: c.scope,
        channelId: c.channelId,
        threadTs: c.threadTs,
        keyId: c.sealed.keyId,
        nonce: c.sealed.nonce,
        ct: c.sealed.ciphertext,
        tag: c.sealed.tag,
        label: c.label,
        createdBy: c.createdBy,
        createdAt: c.createdAt,
        expiresAt: c.expiresAt,
      });
      this.audit(audit);
      return { connection: this.row(c.id)!, replaced };
    });
  }

  private findLiveSameKey(c: NewConnection): Connection | undefined {
    let r: ConnectionRow | undefined;
    if (c.scope === "thread") {
      r = this.db
        .prepare(`SELECT * FROM connections WHERE scope = 'thread' AND ${LIVE} AND team_id = ? AND owner_user_id = ? AND service = ? AND channel_id = ? AND thread_ts = ?`)
        .get(c.teamId, c.ownerUserId, c.service, c.channelId, c.threadTs) as ConnectionRow | undefined;
    } else if (c.scope === "user") {
      r = this.db
        .prepare(`SELECT * FROM connections WHERE scope = 'user' AND ${LIVE} AND team_id = ? AND owner_user_id = ? AND service = ?`)
        .get(c.teamId, c.ownerUserId, c.service) as ConnectionRow | undefined;
    } else {
      r = this.db.prepare(`SELECT * FROM connections WHERE scope = 'shared' AND ${LIVE} AND team_id = ? AND service = ?`).get(c.teamId, c.service) as
        | ConnectionRow
        | undefined;
    }
    return r ? toConnection(r) : undefined;
  }

  async get(id: string): Promise<Connection | undefined> {
    const known = this.memo.row(id);
    if (known) return known;
    const c = this.row(id);
    if (c) this.memo.keep(c);
    return c;
  }

  async ownConnection(q: OwnConnectionQuery): Promise<Connection | undefined> {
    const key = `${q.thread.teamId}\u0000${q.caller}\u0000${q.service}\u0000${q.thread.channelId}\u0000${q.thread.threadTs}`;
    const known = this.memo.own(key);
    if (known === null) return undefined;
    const hit = known === undefined ? undefined : await this.get(known);
    // A remembered row past its expiry (not reaped yet) is looked up again: another own row may serve.
    if (hit && hit.status === "active" && hit.expiresAt > q.now) return hit;
    const r = this.ownRow.get({ team: q.thread.teamId, caller: q.caller, service: q.service, channel: q.thread.channelId, ts: q.thread.threadTs, now: q.now }) as ConnectionRow | undefined;
    const c = r ? toConnection(r) : undefined;
    this.memo.keepOwn(key, c?.id ?? null);
    if (c) this.memo.keep(c);
    return c;
  }

  async list(f: ConnectionFilter): Promise<Connection[]> {
    const clauses: string[] = [];
    const p: Record<string, unknown> = {};
    if (f.teamId) { clauses.push("team_id = @teamId"); p.teamId = f.teamId; }
    if (f.ownerUserId) { clauses.push("owner_user_id = @owner"); p.owner = f.ownerUserId; }
    if (f.service) { clauses.push("service = @service"); p.service = f.service; }
    if (f.scope) { clauses.push("scope = @scope"); p.scope = f.scope; }
    if (f.thread) {
      clauses.push("team_id = @tTeam AND channel_id = @tChannel AND thread_ts = @tTs");
      Object.assign(p, { tTeam: f.thread.teamId, tChannel: f.thread.channelId, tTs: f.thread.threadTs });
    }
    if (f.statuses?.length) {
      const names = f.statuses.map((s, i) => {
        p[`st${i}`] = s;
        return `@st${i}`;
      });
      clauses.push(`status IN (${names.join(", ")})`);
    }
    const where = clauses.length ? `WHERE ${clauses.join(" AND ")}` : "";
    return (this.cached(`SELECT * FROM connections ${where} ORDER BY created_at, id`).all(p) as ConnectionRow[]).map(toConnection);
  }

  async candidates(q: CandidateQuery): Promise<CandidateRow[]> {
    return queryCandidates((sql) => this.cached(sql), q);
  }

  async end(id: string, how: EndConnection): Promise<Connection | undefined> {
    return this.write(() => this.endInTx(id, how));
  }

  async expireDue(now: number): Promise<Connection[]> {
    return this.write(() => {
      const due = this.db.prepare(`SELECT id, team_id, owner_user_id, service FROM connections WHERE ${LIVE} AND expires_at <= ?`).all(now) as ConnectionRow[];
      const out: Connection[] = [];
      for (const r of due) {
        const ended = this.endInTx(r.id, ttlExpiry(r, now));
        if (ended) out.push(ended);
      }
      return out;
    });
  }

  async markNeedsLogin(id: string, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.write(() => {
      const res = this.db
        // The refused credential is useless and still secret: wipe it with the status change.
        .prepare("UPDATE connections SET status = 'needs_login', updated_at = ?, key_id = NULL, secret_nonce = NULL, secret_ct = NULL, secret_tag = NULL WHERE id = ? AND status = 'active'")
        .run(at, id);
      if (res.changes === 1) this.audit(audit);
      return res.changes === 1;
    });
  }

  async updateSecret(id: string, sealed: SealedSecret, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.write(() => {
      const res = this.db
        .prepare("UPDATE connections SET key_id = ?, secret_nonce = ?, secret_ct = ?, secret_tag = ?, updated_at = ? WHERE id = ? AND status = 'active'")
        .run(sealed.keyId, sealed.nonce, sealed.ciphertext, sealed.tag, at, id);
      if (res.changes === 1) this.audit(audit);
      return res.changes === 1;
    });
  }

  async reencryptAll(reseal: (c: Connection & { sealed: SealedSecret }) => SealedSecret, audit: AuditEvent): Promise<number> {
    return this.write(() => {
      const n = this.reencryptInTx(reseal);
      this.audit([audit]);
      return n;
    });
  }

  /** Re-seals every row holding a ciphertext; must run inside a write transaction (Store.reencryptAll shares it). */
  reencryptInTx(reseal: (c: Connection & { sealed: SealedSecret }) => SealedSecret): number {
    this.memo.clear();
    const rows = (this.db.prepare("SELECT * FROM connections WHERE secret_ct IS NOT NULL").all() as ConnectionRow[]).map(toConnection);
    const update = this.db.prepare("UPDATE connections SET key_id = ?, secret_nonce = ?, secret_ct = ?, secret_tag = ? WHERE id = ?");
    for (const c of rows) {
      // A row that cannot be opened aborts the whole rotation: nothing is half re-encrypted.
      const next = reseal(c as Connection & { sealed: SealedSecret });
      update.run(next.keyId, next.nonce, next.ciphertext, next.tag, c.id);
    }
    return rows.length;
  }
}
