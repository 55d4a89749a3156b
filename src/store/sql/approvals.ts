import type { AuditEvent } from "../../audit/event.js";
import type { Approval, Grant } from "../records.js";
import { type ApprovalRow, approvalExpiredAudit, toApproval } from "../rows.js";
import type { ApprovalRepo } from "../store.js";
import { type SqlDialect, stmt } from "./dialect.js";
import type { SqlDriver } from "./driver.js";
import { insertGrant } from "./grants.js";
import { audit, changes, type Program, rows } from "./program.js";

// The approvals repository, once for both adapters (src/store/sql/program.ts). Every transition is
// one conditional UPDATE: under PostgreSQL's READ COMMITTED a second replica's UPDATE waits for the
// first's row lock, re-checks the condition and matches nothing, so a decision applies once.

/** An owner's decision on a pending approval, and the grant an "allow in this thread" makes. */
export interface Decision {
  status: "allowed_thread" | "allowed_once" | "denied";
  by: string;
  at: number;
  grant?: Omit<Grant, "revokedAt" | "revokedBy">;
}

/** What an approvals listing filters on. */
export interface ApprovalFilter {
  teamId?: string;
  ownerUserId?: string;
  pendingAt?: number;
  limit: number;
}

/** Writes a pending approval and its audit rows. */
export function* createApproval(a: Approval, events: readonly AuditEvent[]): Program<void> {
  yield* changes(
    stmt(
      (p) => `INSERT INTO approvals (id, nonce, connection_id, team_id, channel_id, thread_ts, owner_user_id,
        borrower_user_id, service, tool, args_hash, status, created_at, expires_at)
        VALUES (${p(a.id)}, ${p(a.nonce)}, ${p(a.connectionId)}, ${p(a.teamId)}, ${p(a.channelId)}, ${p(a.threadTs)},
        ${p(a.ownerUserId)}, ${p(a.borrowerUserId)}, ${p(a.service)}, ${p(a.tool)}, ${p(a.argsHash)}, 'pending',
        ${p(a.createdAt)}, ${p(a.expiresAt)})`,
    ),
  );
  yield* audit(events);
}

/** One approval by a column that identifies it. */
export function* approvalBy(column: "id" | "nonce", value: string): Program<Approval | undefined> {
  const [r] = yield* rows<ApprovalRow>(stmt((p) => `SELECT * FROM approvals WHERE ${column} = ${p(value)}`));
  return r ? toApproval(r) : undefined;
}

/** Applies the owner's decision to a live pending approval (with its grant); false when it was not one. */
export function* decideApproval(id: string, d: Decision, events: readonly AuditEvent[]): Program<boolean> {
  const n = yield* changes(
    stmt(
      (p) => `UPDATE approvals SET status = ${p(d.status)}, decided_at = ${p(d.at)}, decided_by = ${p(d.by)}
        WHERE id = ${p(id)} AND status = 'pending' AND expires_at > ${p(d.at)} AND owner_user_id = ${p(d.by)}`,
    ),
  );
  if (n !== 1) return false;
  if (d.status === "allowed_thread" && d.grant) yield* insertGrant(d.grant);
  yield* audit(events);
  return true;
}

/** Uses an allowed approval for the arguments it was given for; false when it was not allowed or is used. */
export function* consumeApproval(id: string, argsHash: string, events: readonly AuditEvent[]): Program<boolean> {
  const n = yield* changes(
    stmt(
      (p) => `UPDATE approvals SET status = 'consumed' WHERE id = ${p(id)} AND args_hash = ${p(argsHash)}
        AND status IN ('allowed_once', 'allowed_thread')`,
    ),
  );
  if (n === 1) yield* audit(events);
  return n === 1;
}

/** Expires one pending approval; false when it was not pending. */
export function* expireApproval(id: string, at: number, events: readonly AuditEvent[]): Program<boolean> {
  const n = yield* changes(
    stmt(
      (p) =>
        `UPDATE approvals SET status = 'expired', decided_at = ${p(at)} WHERE id = ${p(id)} AND status = 'pending'`,
    ),
  );
  if (n === 1) yield* audit(events);
  return n === 1;
}

/** Expires the pending approvals past their time (every pending one with `all`), oldest first, each audited. */
export function* expirePendingApprovals(now: number, all: boolean): Program<Approval[]> {
  // One UPDATE … RETURNING: only the rows this call moved get an audit row, whatever other replicas do.
  const moved = yield* rows<ApprovalRow>(
    stmt(
      (p) => `UPDATE approvals SET status = 'expired', decided_at = ${p(now)} WHERE status = 'pending'
        ${all ? "" : `AND expires_at <= ${p(now)}`} RETURNING *`,
    ),
  );
  moved.sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : 1));
  yield* audit(moved.map((r) => approvalExpiredAudit(r, now, all ? "startup" : "reaper")));
  return moved.map(toApproval);
}

/** The approvals matching a filter, newest first (ties by id bytewise), at most `limit`. */
export function* listApprovals(f: ApprovalFilter, d: SqlDialect): Program<Approval[]> {
  const found = yield* rows<ApprovalRow>(
    stmt((p) => {
      const clauses: string[] = [];
      if (f.teamId !== undefined) clauses.push(`team_id = ${p(f.teamId)}`);
      if (f.ownerUserId !== undefined) clauses.push(`owner_user_id = ${p(f.ownerUserId)}`);
      if (f.pendingAt !== undefined) clauses.push(`status = 'pending' AND expires_at > ${p(f.pendingAt)}`);
      const where = clauses.length ? `WHERE ${clauses.join(" AND ")}` : "";
      return `SELECT * FROM approvals ${where} ORDER BY created_at DESC, ${d.bytewise("id")} DESC LIMIT ${p(f.limit)}`;
    }),
  );
  return found.map(toApproval);
}

/** Records where an approval's card was posted. */
export function* setApprovalCard(id: string, channel: string, ts: string): Program<void> {
  yield* changes(
    stmt((p) => `UPDATE approvals SET card_channel = ${p(channel)}, card_ts = ${p(ts)} WHERE id = ${p(id)}`),
  );
}

/** The approvals repository on either adapter's driver. */
export class SqlApprovalRepo implements ApprovalRepo {
  constructor(protected readonly driver: SqlDriver) {}
  async create(a: Approval, events: readonly AuditEvent[]): Promise<void> {
    await this.driver.write(createApproval(a, events));
  }
  get(id: string): Promise<Approval | undefined> {
    return this.driver.read(approvalBy("id", id));
  }
  getByNonce(nonce: string): Promise<Approval | undefined> {
    return this.driver.read(approvalBy("nonce", nonce));
  }
  decide(id: string, d: Decision, events: readonly AuditEvent[]): Promise<boolean> {
    return this.driver.write(decideApproval(id, d, events));
  }
  consume(id: string, argsHash: string, _at: number, events: readonly AuditEvent[]): Promise<boolean> {
    return this.driver.write(consumeApproval(id, argsHash, events));
  }
  expire(id: string, at: number, events: readonly AuditEvent[]): Promise<boolean> {
    return this.driver.write(expireApproval(id, at, events));
  }
  expirePending(now: number, all = false): Promise<Approval[]> {
    return this.driver.write(expirePendingApprovals(now, all));
  }
  list(filter: ApprovalFilter): Promise<Approval[]> {
    return this.driver.read(listApprovals(filter, this.driver.dialect));
  }
  async setCard(id: string, channel: string, ts: string): Promise<void> {
    await this.driver.write(setApprovalCard(id, channel, ts));
  }
}
