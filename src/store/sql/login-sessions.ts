import type { AuditEvent } from "../../audit/event.js";
import type { LoginSession } from "../records.js";
import { type LoginRow, toSession } from "../rows.js";
import type { LoginSessionRepo } from "../store.js";
import { stmt } from "./dialect.js";
import type { SqlDriver } from "./driver.js";
import { audit, changes, type Program, rows } from "./program.js";

// The login sessions, once for both adapters (src/store/sql/program.ts): opening and ending are
// conditional updates that apply at most once, however many replicas try.

/** A login session as minted: what the caller gives. */
export type NewLoginSession = Omit<LoginSession, "status" | "openedAt" | "endedAt" | "connectionId" | "viewerHash">;

/** How a login session ends. */
export type LoginEnd = "completed" | "cancelled" | "expired" | "failed";

/** Writes a minted session and its audit rows. */
export function* createLoginSession(s: NewLoginSession, events: readonly AuditEvent[]): Program<void> {
  yield* changes(
    stmt(
      (p) => `INSERT INTO login_sessions (id, token_hash, team_id, user_id, service, scope, channel_id, thread_ts,
        status, created_at, expires_at) VALUES (${p(s.id)}, ${p(s.tokenHash)}, ${p(s.teamId)}, ${p(s.userId)},
        ${p(s.service)}, ${p(s.scope)}, ${p(s.channelId)}, ${p(s.threadTs)}, 'minted', ${p(s.createdAt)},
        ${p(s.expiresAt)})`,
    ),
  );
  yield* audit(events);
}

/** One session by a column that identifies it. */
export function* loginSessionBy(column: "id" | "token_hash", value: string): Program<LoginSession | undefined> {
  const [r] = yield* rows<LoginRow>(stmt((p) => `SELECT * FROM login_sessions WHERE ${column} = ${p(value)}`));
  return r ? toSession(r) : undefined;
}

/** Opens a live minted session for one viewer until `flowExpiresAt`; undefined when it was not one. */
export function* openLoginSession(
  tokenHash: string,
  viewerHash: string,
  at: number,
  flowExpiresAt: number,
  events: readonly AuditEvent[],
): Program<LoginSession | undefined> {
  const [r] = yield* rows<LoginRow>(
    stmt(
      (p) => `UPDATE login_sessions SET status = 'opened', opened_at = ${p(at)}, viewer_hash = ${p(viewerHash)},
        expires_at = ${p(flowExpiresAt)} WHERE token_hash = ${p(tokenHash)} AND status = 'minted'
        AND expires_at > ${p(at)} RETURNING *`,
    ),
  );
  if (!r) return undefined;
  yield* audit(events);
  return toSession(r);
}

/** Ends a minted or opened session; false when it had ended. */
export function* endLoginSession(
  id: string,
  status: LoginEnd,
  at: number,
  connectionId: string | null,
  events: readonly AuditEvent[],
): Program<boolean> {
  const n = yield* changes(
    stmt(
      (p) => `UPDATE login_sessions SET status = ${p(status)}, ended_at = ${p(at)}, connection_id = ${p(connectionId)}
        WHERE id = ${p(id)} AND status IN ('minted', 'opened')`,
    ),
  );
  if (n === 1) yield* audit(events);
  return n === 1;
}

/** Expires the sessions past their time, oldest first, each audited as the reaper's refusal. */
export function* expireLoginSessions(now: number): Program<LoginSession[]> {
  // One UPDATE … RETURNING: only the rows this call moved get an audit row, whatever other replicas do.
  const moved = yield* rows<LoginRow>(
    stmt(
      (p) => `UPDATE login_sessions SET status = 'expired', ended_at = ${p(now)}
        WHERE status IN ('minted', 'opened') AND expires_at <= ${p(now)} RETURNING *`,
    ),
  );
  moved.sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : 1));
  yield* audit(
    moved.map((r) => ({
      at: now,
      event: "login_refused" as const,
      teamId: r.team_id,
      callerUserId: r.user_id,
      service: r.service,
      decision: "expired",
      actor: "reaper",
    })),
  );
  return moved.map(toSession);
}

/** The login sessions repository on either adapter's driver. */
export class SqlLoginSessionRepo implements LoginSessionRepo {
  constructor(protected readonly driver: SqlDriver) {}
  async create(s: NewLoginSession, events: readonly AuditEvent[]): Promise<void> {
    await this.driver.write(createLoginSession(s, events));
  }
  get(id: string): Promise<LoginSession | undefined> {
    return this.driver.read(loginSessionBy("id", id));
  }
  getByTokenHash(tokenHash: string): Promise<LoginSession | undefined> {
    return this.driver.read(loginSessionBy("token_hash", tokenHash));
  }
  open(
    tokenHash: string,
    viewerHash: string,
    at: number,
    flowExpiresAt: number,
    events: readonly AuditEvent[],
  ): Promise<LoginSession | undefined> {
    return this.driver.write(openLoginSession(tokenHash, viewerHash, at, flowExpiresAt, events));
  }
  end(
    id: string,
    status: LoginEnd,
    at: number,
    connectionId: string | null,
    events: readonly AuditEvent[],
  ): Promise<boolean> {
    return this.driver.write(endLoginSession(id, status, at, connectionId, events));
  }
  expireDue(now: number): Promise<LoginSession[]> {
    return this.driver.write(expireLoginSessions(now));
  }
}
