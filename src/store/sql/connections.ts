import type { AuditEvent } from "../../audit/event.js";
import type { SealedSecret } from "../../vault/aead.js";
import type { Connection, NewConnection } from "../records.js";
import { type ConnectionRow, toConnection, ttlExpiry } from "../rows.js";
import type { ConnectionFilter, EndConnection } from "../store.js";
import { type SqlDialect, stmt } from "./dialect.js";
import { audit, changes, lock, type Program, rows } from "./program.js";

// The connections repository's writes, once for both adapters (src/store/sql/program.ts): the
// connection-end cascade (row ended and wiped, its grants revoked, its approvals expired, every
// step audited), the replace-on-create, the TTL reaper, needs_login, the secret's updates.

const LIVE = "status IN ('active', 'needs_login')";
const WIPE = "key_id = NULL, secret_nonce = NULL, secret_ct = NULL, secret_tag = NULL";

/** A re-sealer of one connection's secret (a key rotation). */
export type Reseal = (c: Connection & { sealed: SealedSecret }) => SealedSecret;

/** One connection row, if it exists. */
export function* connectionRow(id: string): Program<Connection | undefined> {
  const [r] = yield* rows<ConnectionRow>(stmt((p) => `SELECT * FROM connections WHERE id = ${p(id)}`));
  return r ? toConnection(r) : undefined;
}

interface RevokedGrant {
  id: string;
  team_id: string;
  channel_id: string;
  thread_ts: string;
  owner_user_id: string;
  borrower_user_id: string;
  service: string;
  created_at: number;
}

/**
 * Ends one live row and everything hanging off it, inside the caller's transaction. The
 * conditional UPDATE is the check: a concurrent end (another replica's) makes this one a no-op.
 */
export function* endConnection(id: string, how: EndConnection): Program<Connection | undefined> {
  const ended = yield* changes(
    stmt(
      (
        p,
      ) => `UPDATE connections SET status = ${p(how.status)}, ended_at = ${p(how.at)}, ended_reason = ${p(how.reason)},
        updated_at = ${p(how.at)}, ${WIPE} WHERE id = ${p(id)} AND ${LIVE}`,
    ),
  );
  if (ended !== 1) return undefined;
  const grants = yield* rows<RevokedGrant>(
    stmt(
      (p) => `UPDATE grants SET revoked_at = ${p(how.at)}, revoked_by = ${p(how.actor)}
        WHERE connection_id = ${p(id)} AND revoked_at IS NULL
        RETURNING id, team_id, channel_id, thread_ts, owner_user_id, borrower_user_id, service, created_at`,
    ),
  );
  yield* changes(
    stmt(
      (p) => `UPDATE approvals SET status = 'expired', decided_at = ${p(how.at)}
        WHERE connection_id = ${p(id)} AND status IN ('pending', 'allowed_once', 'allowed_thread')`,
    ),
  );
  yield* audit(how.audit);
  // In the order the grants were made, whatever order the database returned them in.
  grants.sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  yield* audit(
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
  return yield* connectionRow(id);
}

/** The dedupe key of a connection's scope, as the partial unique indexes of migration 0001 see it. */
function dedupeKey(
  c: Pick<NewConnection, "scope" | "teamId" | "ownerUserId" | "service" | "channelId" | "threadTs">,
): string {
  const owner = c.scope === "shared" ? null : c.ownerUserId;
  return JSON.stringify([
    "connection",
    c.scope,
    c.teamId,
    owner,
    c.service,
    c.scope === "thread" ? [c.channelId, c.threadTs] : null,
  ]);
}

/** The live row with the same dedupe key as `c` (one per thread, per owner, or shared per service). */
function* liveSameKey(c: NewConnection): Program<Connection | undefined> {
  const [r] = yield* rows<ConnectionRow>(
    stmt((p) => {
      const base = `SELECT * FROM connections WHERE scope = ${p(c.scope)} AND ${LIVE} AND team_id = ${p(c.teamId)}`;
      if (c.scope === "shared") return `${base} AND service = ${p(c.service)}`;
      const owned = `${base} AND owner_user_id = ${p(c.ownerUserId)} AND service = ${p(c.service)}`;
      return c.scope === "user"
        ? owned
        : `${owned} AND channel_id = ${p(c.channelId)} AND thread_ts = ${p(c.threadTs)}`;
    }),
  );
  return r ? toConnection(r) : undefined;
}

/** Creates a connection; a live one with the same key is ended as revoked/"replaced" first, in the same transaction. */
export function* createConnection(
  c: NewConnection,
  events: readonly AuditEvent[],
): Program<{ connection: Connection; replaced: Connection | null }> {
  // Two writers creating the same key at once: the second waits here and then replaces the first,
  // as one writer would have it, instead of failing on the unique index.
  yield* lock(dedupeKey(c));
  const existing = yield* liveSameKey(c);
  let replaced: Connection | null = null;
  if (existing) {
    const event: AuditEvent = {
      at: c.createdAt,
      event: "connection_replaced",
      teamId: c.teamId,
      ownerUserId: c.ownerUserId,
      connectionId: existing.id,
      service: c.service,
      actor: c.createdBy,
    };
    const how: EndConnection = {
      status: "revoked",
      reason: "replaced",
      at: c.createdAt,
      actor: c.createdBy,
      audit: [event],
    };
    replaced = (yield* endConnection(existing.id, how)) ?? null;
  }
  const s = c.sealed;
  yield* changes(
    stmt(
      (p) => `INSERT INTO connections (id, team_id, owner_user_id, service, scope, channel_id, thread_ts, status,
        key_id, secret_nonce, secret_ct, secret_tag, label, created_by, created_at, updated_at, expires_at)
        VALUES (${p(c.id)}, ${p(c.teamId)}, ${p(c.ownerUserId)}, ${p(c.service)}, ${p(c.scope)}, ${p(c.channelId)},
        ${p(c.threadTs)}, 'active', ${p(s.keyId)}, ${p(s.nonce)}, ${p(s.ciphertext)}, ${p(s.tag)}, ${p(c.label)},
        ${p(c.createdBy)}, ${p(c.createdAt)}, ${p(c.createdAt)}, ${p(c.expiresAt)})`,
    ),
  );
  yield* audit(events);
  // The row was inserted by this transaction a statement ago.
  return { connection: (yield* connectionRow(c.id))!, replaced };
}

/** Ends every live row past its expiry (the TTL reaper); replicas reaping at once split the rows. */
export function* expireDueConnections(now: number, d: SqlDialect): Program<Connection[]> {
  const due = yield* rows<{ id: string; team_id: string; owner_user_id: string | null; service: string }>(
    stmt(
      (p) => `SELECT id, team_id, owner_user_id, service FROM connections WHERE ${LIVE} AND expires_at <= ${p(now)}
        ORDER BY ${d.bytewise("id")}${d.forUpdateSkipLocked}`,
    ),
  );
  const out: Connection[] = [];
  for (const r of due) {
    const ended = yield* endConnection(r.id, ttlExpiry(r, now));
    if (ended) out.push(ended);
  }
  return out;
}

/** Marks an active row as needing a new login; the refused credential is useless and still secret: wiped with it. */
export function* markNeedsLogin(id: string, at: number, events: readonly AuditEvent[]): Program<boolean> {
  const n = yield* changes(
    stmt(
      (p) =>
        `UPDATE connections SET status = 'needs_login', updated_at = ${p(at)}, ${WIPE}
          WHERE id = ${p(id)} AND status = 'active'`,
    ),
  );
  if (n === 1) yield* audit(events);
  return n === 1;
}

/** Replaces the sealed secret of an active row (refreshed tokens). */
export function* updateSecret(
  id: string,
  sealed: SealedSecret,
  at: number,
  events: readonly AuditEvent[],
): Program<boolean> {
  const n = yield* changes(
    stmt(
      (p) => `UPDATE connections SET key_id = ${p(sealed.keyId)}, secret_nonce = ${p(sealed.nonce)},
        secret_ct = ${p(sealed.ciphertext)}, secret_tag = ${p(sealed.tag)}, updated_at = ${p(at)}
        WHERE id = ${p(id)} AND status = 'active'`,
    ),
  );
  if (n === 1) yield* audit(events);
  return n === 1;
}

/** Re-seals every row holding a ciphertext, inside the caller's transaction; returns the count. */
export function* reencryptConnections(reseal: Reseal, d: SqlDialect): Program<number> {
  // FOR UPDATE: a replica refreshing a token meanwhile waits, so no row keeps a ciphertext under the old key.
  const all = yield* rows<ConnectionRow>(
    stmt(() => `SELECT * FROM connections WHERE secret_ct IS NOT NULL ORDER BY ${d.bytewise("id")}${d.forUpdate}`),
  );
  for (const c of all.map(toConnection)) {
    // A row that cannot be opened aborts the whole rotation: nothing is half re-encrypted.
    const next = reseal(c as Connection & { sealed: SealedSecret });
    yield* changes(
      stmt(
        (p) => `UPDATE connections SET key_id = ${p(next.keyId)}, secret_nonce = ${p(next.nonce)},
          secret_ct = ${p(next.ciphertext)}, secret_tag = ${p(next.tag)} WHERE id = ${p(c.id)}`,
      ),
    );
  }
  return all.length;
}

/** A key rotation of every connection, audited once. */
export function* reencryptAllConnections(reseal: Reseal, event: AuditEvent, d: SqlDialect): Program<number> {
  const n = yield* reencryptConnections(reseal, d);
  yield* audit([event]);
  return n;
}

/** The rows matching a filter, oldest first. */
export function* listConnections(f: ConnectionFilter): Program<Connection[]> {
  const found = yield* rows<ConnectionRow>(
    stmt((p) => {
      const clauses: string[] = [];
      if (f.teamId) clauses.push(`team_id = ${p(f.teamId)}`);
      if (f.ownerUserId) clauses.push(`owner_user_id = ${p(f.ownerUserId)}`);
      if (f.service) clauses.push(`service = ${p(f.service)}`);
      if (f.scope) clauses.push(`scope = ${p(f.scope)}`);
      const t = f.thread;
      if (t)
        clauses.push(`team_id = ${p(t.teamId)} AND channel_id = ${p(t.channelId)} AND thread_ts = ${p(t.threadTs)}`);
      if (f.statuses?.length) clauses.push(`status IN (${f.statuses.map((s) => p(s)).join(", ")})`);
      const where = clauses.length ? `WHERE ${clauses.join(" AND ")}` : "";
      return `SELECT * FROM connections ${where} ORDER BY created_at, id`;
    }),
  );
  return found.map(toConnection);
}
