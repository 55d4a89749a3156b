import type { AuditEvent } from "../../audit/event.js";
import type { ThreadRef } from "../../domain/thread.js";
import type { Grant } from "../records.js";
import { type GrantRow, toGrant } from "../rows.js";
import { stmt } from "./dialect.js";
import { audit, changes, type Program, rows } from "./program.js";

// The grants repository, once for both adapters (src/store/sql/program.ts).

/** What a grants listing filters on. */
export interface GrantFilter {
  teamId?: string;
  ownerUserId?: string;
  borrowerUserId?: string;
  connectionId?: string;
  liveOnly?: boolean;
}

/** The live grant of a borrower on a connection in a thread, if any. */
export function* findLiveGrant(connectionId: string, borrowerUserId: string, t: ThreadRef): Program<Grant | undefined> {
  const [r] = yield* rows<GrantRow>(
    stmt(
      (p) => `SELECT * FROM grants WHERE connection_id = ${p(connectionId)} AND borrower_user_id = ${p(borrowerUserId)}
        AND team_id = ${p(t.teamId)} AND channel_id = ${p(t.channelId)} AND thread_ts = ${p(t.threadTs)}
        AND revoked_at IS NULL`,
    ),
  );
  return r ? toGrant(r) : undefined;
}

/**
 * Inserts a grant unless a live one exists (then returns that one), inside the caller's transaction.
 * ON CONFLICT on the partial unique index (its WHERE repeated): two writers applying the same decision make one grant.
 */
export function* insertGrant(g: Omit<Grant, "revokedAt" | "revokedBy">): Program<Grant> {
  const [inserted] = yield* rows<GrantRow>(
    stmt(
      (p) => `INSERT INTO grants (id, connection_id, team_id, channel_id, thread_ts, owner_user_id, borrower_user_id,
        service, created_at) VALUES (${p(g.id)}, ${p(g.connectionId)}, ${p(g.teamId)}, ${p(g.channelId)},
        ${p(g.threadTs)}, ${p(g.ownerUserId)},
        ${p(g.borrowerUserId)}, ${p(g.service)}, ${p(g.createdAt)})
        ON CONFLICT (connection_id, borrower_user_id, team_id, channel_id, thread_ts) WHERE revoked_at IS NULL
        DO NOTHING
        RETURNING *`,
    ),
  );
  if (inserted) return toGrant(inserted);
  // The conflict was with this live row, in the same transaction.
  return (yield* findLiveGrant(g.connectionId, g.borrowerUserId, g))!;
}

/** Creates a grant and audits it, unless a live one existed (then that one, unaudited). */
export function* createGrant(g: Omit<Grant, "revokedAt" | "revokedBy">, events: readonly AuditEvent[]): Program<Grant> {
  const grant = yield* insertGrant(g);
  if (grant.id === g.id) yield* audit(events);
  return grant;
}

/** One grant by id. */
export function* grantById(id: string): Program<Grant | undefined> {
  const [r] = yield* rows<GrantRow>(stmt((p) => `SELECT * FROM grants WHERE id = ${p(id)}`));
  return r ? toGrant(r) : undefined;
}

/** The grants matching a filter, oldest first. */
export function* listGrants(f: GrantFilter): Program<Grant[]> {
  const found = yield* rows<GrantRow>(
    stmt((p) => {
      const clauses: string[] = [];
      if (f.teamId) clauses.push(`team_id = ${p(f.teamId)}`);
      if (f.ownerUserId) clauses.push(`owner_user_id = ${p(f.ownerUserId)}`);
      if (f.borrowerUserId) clauses.push(`borrower_user_id = ${p(f.borrowerUserId)}`);
      if (f.connectionId) clauses.push(`connection_id = ${p(f.connectionId)}`);
      if (f.liveOnly) clauses.push("revoked_at IS NULL");
      const where = clauses.length ? `WHERE ${clauses.join(" AND ")}` : "";
      return `SELECT * FROM grants ${where} ORDER BY created_at, id`;
    }),
  );
  return found.map(toGrant);
}

/** Revokes a live grant and audits it; false if it was not live. */
export function* revokeGrant(id: string, by: string, at: number, events: readonly AuditEvent[]): Program<boolean> {
  const n = yield* changes(
    stmt(
      (p) =>
        `UPDATE grants SET revoked_at = ${p(at)}, revoked_by = ${p(by)} WHERE id = ${p(id)} AND revoked_at IS NULL`,
    ),
  );
  if (n === 1) yield* audit(events);
  return n === 1;
}
