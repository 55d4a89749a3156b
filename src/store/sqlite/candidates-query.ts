import type { Statement } from "better-sqlite3";
import type { CandidateQuery, CandidateRow } from "../store.js";
import type { Db } from "./db.js";
import { toCandidate, type CandidateMetaRow } from "../rows.js";

// The candidates of one call (or one connections_list page) in one statement. Each branch of the
// union is an equality lookup on an index of migrations 0001/0005, so its cost follows the rows
// this caller can use, never the size of the team; the sealed-secret columns are never read here.

const META_COLUMNS = "c.id, c.team_id, c.owner_user_id, c.service, c.scope, c.channel_id, c.thread_ts, c.status, c.label, c.created_by, c.created_at, c.updated_at, c.expires_at, c.ended_at, c.ended_reason";


/** The SQL of one query shape (by service or not, own rows here or everywhere, first page or not). */
export function candidatesSql(q: Pick<CandidateQuery, "service" | "own" | "after">): string {
  const svc = q.service !== undefined ? " AND service = @service" : "";
  // The partial indexes' own WHERE terms are repeated word for word so the planner can use them.
  const liveUser = "scope = 'user' AND status IN ('active', 'needs_login')";
  const liveShared = "scope = 'shared' AND status IN ('active', 'needs_login')";
  const usable = "status = 'active' AND expires_at > @now";
  const own =
    q.own === "here"
      ? `SELECT id FROM connections WHERE team_id = @team AND owner_user_id = @caller AND scope = 'thread' AND status IN ('active', 'needs_login') AND channel_id = @channel AND thread_ts = @ts${svc} AND ${usable}
         UNION SELECT id FROM connections WHERE ${liveUser} AND team_id = @team AND owner_user_id = @caller${svc} AND ${usable}`
      : `SELECT id FROM connections WHERE team_id = @team AND owner_user_id = @caller${svc} AND status IN ('active', 'needs_login')`;
  const branches = [
    own,
    `SELECT id FROM connections WHERE status = 'active' AND team_id = @team AND channel_id = @channel AND thread_ts = @ts${svc} AND scope = 'thread' AND expires_at > @now`,
    `SELECT id FROM connections WHERE ${liveUser} AND team_id = @team AND owner_user_id IN (SELECT value FROM json_each(@participants))${svc} AND ${usable}`,
    // Shared rows have no owner: `owner_user_id IS NULL` keeps a lookup without a service off the team's other rows.
    `SELECT id FROM connections WHERE ${liveShared} AND team_id = @team AND owner_user_id IS NULL${svc} AND ${usable}`,
  ];
  return `SELECT ${META_COLUMNS},
    EXISTS (SELECT 1 FROM grants g WHERE g.connection_id = c.id AND g.borrower_user_id = @caller AND g.team_id = @team AND g.channel_id = @channel AND g.thread_ts = @ts AND g.revoked_at IS NULL) AS granted,
    CASE WHEN c.owner_user_id = @caller THEN (SELECT count(*) FROM grants g WHERE g.connection_id = c.id AND g.revoked_at IS NULL) ELSE 0 END AS grants_given
    FROM connections c WHERE c.id IN (${branches.join("\n UNION ")})${q.after !== undefined ? " AND c.id > @after" : ""}
    ORDER BY c.id LIMIT @limit`;
}

/** The named parameters of `candidatesSql(q)`. */
export function candidatesParams(q: CandidateQuery): Record<string, unknown> {
  return {
    team: q.thread.teamId,
    channel: q.thread.channelId,
    ts: q.thread.threadTs,
    caller: q.caller,
    participants: JSON.stringify(q.participants),
    now: q.now,
    limit: q.limit,
    ...(q.service !== undefined ? { service: q.service } : {}),
    ...(q.after !== undefined ? { after: q.after } : {}),
  };
}

/** Runs the query with a prepared statement from `prepare` (cached by SQL text by the caller). */
export function queryCandidates(prepare: (sql: string) => Statement<unknown[]>, q: CandidateQuery): CandidateRow[] {
  const rows = prepare(candidatesSql(q)).all(candidatesParams(q)) as CandidateMetaRow[];
  return rows.map(toCandidate);
}

/**
 * For tests and reviews: the steps of the query's plan that read `connections` by anything less
 * than a per-caller, per-thread or per-row key (a full scan, or an index searched by team alone).
 */
export function teamScans(db: Db, q: CandidateQuery): string[] {
  const plan = db.prepare(`EXPLAIN QUERY PLAN ${candidatesSql(q)}`).all(candidatesParams(q)) as { detail: string }[];
  return plan.map((p) => p.detail).filter((d) => /^SCAN (c|connections)\b/.test(d) || /^SEARCH (c|connections) .*\(team_id=\?\)$/.test(d));
}
