import type { AuditEvent } from "../../audit/event.js";
import type { SealedSecret } from "../../vault/aead.js";
import type { Connection, NewConnection } from "../records.js";
import { toConnection, ttlExpiry, type ConnectionRow } from "../rows.js";
import type { CandidateQuery, CandidateRow, ConnectionFilter, ConnectionRepo, EndConnection, OwnConnectionQuery } from "../store.js";
import { queryPgCandidates } from "./candidates-query.js";
import { writeAudit } from "./audit-repo.js";
import { xactLock } from "./lock-keys.js";
import { type PgDb, type Sql } from "./pg-db.js";


const LIVE = "status IN ('active', 'needs_login')";

const WIPE = "key_id = NULL, secret_nonce = NULL, secret_ct = NULL, secret_tag = NULL";

/** The dedupe key of a connection's scope, as the partial unique indexes of migration 0001 see it. */
function dedupeKey(c: Pick<NewConnection, "scope" | "teamId" | "ownerUserId" | "service" | "channelId" | "threadTs">): string {
  return JSON.stringify(["connection", c.scope, c.teamId, c.scope === "shared" ? null : c.ownerUserId, c.service, c.scope === "thread" ? [c.channelId, c.threadTs] : null]);
}

/** PostgreSQL connections repository; same contract as the SQLite one, safe across replicas. */
export class PgConnectionRepo implements ConnectionRepo {
  constructor(private readonly db: PgDb) {}

  private async row(q: Sql, id: string, lock = false): Promise<Connection | undefined> {
    const r = (await q.query<ConnectionRow>(`SELECT * FROM connections WHERE id = $1${lock ? " FOR UPDATE" : ""}`, [id])).rows[0];
    return r ? toConnection(r) : undefined;
  }

  /** Ends one live row and everything hanging off it, inside the caller's transaction. */
  private async endInTx(q: Sql, id: string, how: EndConnection): Promise<Connection | undefined> {
    const ended = await q.query(`UPDATE connections SET status = $2, ended_at = $3, ended_reason = $4, updated_at = $3, ${WIPE} WHERE id = $1 AND ${LIVE}`, [
      id,
      how.status,
      how.at,
      how.reason,
    ]);
    // The conditional UPDATE is the check: a concurrent end on another replica makes this one a no-op.
    if (ended.rowCount !== 1) return undefined;
    const grants = (
      await q.query<{ team_id: string; channel_id: string; thread_ts: string; owner_user_id: string; borrower_user_id: string; service: string }>(
        "UPDATE grants SET revoked_at = $2, revoked_by = $3 WHERE connection_id = $1 AND revoked_at IS NULL RETURNING team_id, channel_id, thread_ts, owner_user_id, borrower_user_id, service, created_at, id",
        [id, how.at, how.actor],
      )
    ).rows;
    await q.query("UPDATE approvals SET status = 'expired', decided_at = $2 WHERE connection_id = $1 AND status IN ('pending', 'allowed_once', 'allowed_thread')", [id, how.at]);
    await writeAudit(q, how.audit);
    await writeAudit(
      q,
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
    return this.row(q, id);
  }

  async create(c: NewConnection, audit: readonly AuditEvent[]): Promise<{ connection: Connection; replaced: Connection | null }> {
    return this.db.tx(async (q) => {
      // Two replicas creating the same key at once: the second waits here and then replaces the first,
      // as SQLite's single writer would have it, instead of failing on the unique index.
      await xactLock(q, this.db.lockKeys, dedupeKey(c));
      const existing = await this.findLiveSameKey(q, c);
      let replaced: Connection | null = null;
      if (existing) {
        replaced =
          (await this.endInTx(q, existing.id, {
            status: "revoked",
            reason: "replaced",
            at: c.createdAt,
            actor: c.createdBy,
            audit: [{ at: c.createdAt, event: "connection_replaced", teamId: c.teamId, ownerUserId: c.ownerUserId, connectionId: existing.id, service: c.service, actor: c.createdBy }],
          })) ?? null;
      }
      await q.query(
        `INSERT INTO connections (id, team_id, owner_user_id, service, scope, channel_id, thread_ts, status, key_id, secret_nonce, secret_ct, secret_tag,
         label, created_by, created_at, updated_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 'active', $8, $9, $10, $11, $12, $13, $14, $14, $15)`,
        [c.id, c.teamId, c.ownerUserId, c.service, c.scope, c.channelId, c.threadTs, c.sealed.keyId, c.sealed.nonce, c.sealed.ciphertext, c.sealed.tag, c.label, c.createdBy, c.createdAt, c.expiresAt],
      );
      await writeAudit(q, audit);
      return { connection: (await this.row(q, c.id))!, replaced };
    });
  }

  private async findLiveSameKey(q: Sql, c: NewConnection): Promise<Connection | undefined> {
    let r: ConnectionRow | undefined;
    if (c.scope === "thread") {
      r = (
        await q.query<ConnectionRow>(`SELECT * FROM connections WHERE scope = 'thread' AND ${LIVE} AND team_id = $1 AND owner_user_id = $2 AND service = $3 AND channel_id = $4 AND thread_ts = $5`, [
          c.teamId,
          c.ownerUserId,
          c.service,
          c.channelId,
          c.threadTs,
        ])
      ).rows[0];
    } else if (c.scope === "user") {
      r = (await q.query<ConnectionRow>(`SELECT * FROM connections WHERE scope = 'user' AND ${LIVE} AND team_id = $1 AND owner_user_id = $2 AND service = $3`, [c.teamId, c.ownerUserId, c.service])).rows[0];
    } else {
      r = (await q.query<ConnectionRow>(`SELECT * FROM connections WHERE scope = 'shared' AND ${LIVE} AND team_id = $1 AND service = $2`, [c.teamId, c.service])).rows[0];
    }
    return r ? toConnection(r) : undefined;
  }

  async get(id: string): Promise<Connection | undefined> {
    return this.row(this.db, id);
  }

  async list(f: ConnectionFilter): Promise<Connection[]> {
    const clauses: string[] = [];
    const params: unknown[] = [];
    const p = (v: unknown): string => {
      params.push(v);
      return `$${params.length}`;
    };
    if (f.teamId) clauses.push(`team_id = ${p(f.teamId)}`);
    if (f.ownerUserId) clauses.push(`owner_user_id = ${p(f.ownerUserId)}`);
    if (f.service) clauses.push(`service = ${p(f.service)}`);
    if (f.scope) clauses.push(`scope = ${p(f.scope)}`);
    if (f.thread) clauses.push(`team_id = ${p(f.thread.teamId)} AND channel_id = ${p(f.thread.channelId)} AND thread_ts = ${p(f.thread.threadTs)}`);
    if (f.statuses?.length) clauses.push(`status = ANY(${p([...f.statuses])}::text[])`);
    const where = clauses.length ? `WHERE ${clauses.join(" AND ")}` : "";
    return (await this.db.query<ConnectionRow>(`SELECT * FROM connections ${where} ORDER BY created_at, id`, params)).rows.map(toConnection);
  }

  /** No memo here: another replica's revoke must win on the next call, and only the database knows it. */
  async ownConnection(q: OwnConnectionQuery): Promise<Connection | undefined> {
    const r = (
      await this.db.query<ConnectionRow>(
        `SELECT * FROM connections WHERE team_id = $1 AND owner_user_id = $2 AND service = $3 AND status = 'active'
         AND expires_at > $4 AND ((scope = 'thread' AND channel_id = $5 AND thread_ts = $6) OR scope = 'user')
         ORDER BY CASE scope WHEN 'thread' THEN 0 ELSE 1 END, created_at, id COLLATE "C" LIMIT 1`,
        [q.thread.teamId, q.caller, q.service, q.now, q.thread.channelId, q.thread.threadTs],
      )
    ).rows[0];
    return r ? toConnection(r) : undefined;
  }

  async candidates(q: CandidateQuery): Promise<CandidateRow[]> {
    return queryPgCandidates(this.db, q);
  }

  async end(id: string, how: EndConnection): Promise<Connection | undefined> {
    return this.db.tx((q) => this.endInTx(q, id, how));
  }

  async expireDue(now: number): Promise<Connection[]> {
    return this.db.tx(async (q) => {
      // SKIP LOCKED: two replicas' reapers split the due rows instead of queueing behind each other.
      const due = (
        await q.query<{ id: string; team_id: string; owner_user_id: string | null; service: string }>(
          `SELECT id, team_id, owner_user_id, service FROM connections WHERE ${LIVE} AND expires_at <= $1 ORDER BY id FOR UPDATE SKIP LOCKED`,
          [now],
        )
      ).rows;
      const out: Connection[] = [];
      for (const r of due) {
        const ended = await this.endInTx(q, r.id, ttlExpiry(r, now));
        if (ended) out.push(ended);
      }
      return out;
    });
  }

  async markNeedsLogin(id: string, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.db.tx(async (q) => {
      // The refused credential is useless and still secret: wipe it with the status change.
      const res = await q.query(`UPDATE connections SET status = 'needs_login', updated_at = $2, ${WIPE} WHERE id = $1 AND status = 'active'`, [id, at]);
      if (res.rowCount === 1) await writeAudit(q, audit);
      return res.rowCount === 1;
    });
  }

  async updateSecret(id: string, sealed: SealedSecret, at: number, audit: readonly AuditEvent[]): Promise<boolean> {
    return this.db.tx(async (q) => {
      const res = await q.query("UPDATE connections SET key_id = $2, secret_nonce = $3, secret_ct = $4, secret_tag = $5, updated_at = $6 WHERE id = $1 AND status = 'active'", [
        id,
        sealed.keyId,
        sealed.nonce,
        sealed.ciphertext,
        sealed.tag,
        at,
      ]);
      if (res.rowCount === 1) await writeAudit(q, audit);
      return res.rowCount === 1;
    });
  }

  async reencryptAll(reseal: (c: Connection & { sealed: SealedSecret }) => SealedSecret, audit: AuditEvent): Promise<number> {
    return this.db.tx(async (q) => {
      const n = await reencryptConnections(q, reseal);
      await writeAudit(q, [audit]);
      return n;
    });
  }
}

/** Re-seals every connection holding a ciphertext with `q`, the client of an open transaction (Store.reencryptAll shares it). */
export async function reencryptConnections(q: Sql, reseal: (c: Connection & { sealed: SealedSecret }) => SealedSecret): Promise<number> {
  // FOR UPDATE: a replica refreshing a token meanwhile waits, so no row keeps a ciphertext under the old key.
  const rows = (await q.query<ConnectionRow>("SELECT * FROM connections WHERE secret_ct IS NOT NULL ORDER BY id FOR UPDATE")).rows.map(toConnection);
  for (const c of rows) {
    // A row that cannot be opened aborts the whole rotation: nothing is half re-encrypted.
    const next = reseal(c as Connection & { sealed: SealedSecret });
    await q.query("UPDATE connections SET key_id = $2, secret_nonce = $3, secret_ct = $4, secret_tag = $5 WHERE id = $1", [c.id, next.keyId, next.nonce, next.ciphertext, next.tag]);
  }
  return rows.length;
}
