import type { CandidateQuery, OwnConnectionQuery } from "../store.js";
import { type SqlDialect, type Stmt, stmt } from "./dialect.js";

// Who may use which row, in SQL, once for both adapters: the candidates of one call (or one
// connections_list page) and the caller's own row. Each branch of the candidates union is an
// equality lookup on an index of migrations 0001/0005, so its cost follows the rows this caller
// can use, never the size of the team; the sealed-secret columns are never read here. The borrow
// rule is applied again to what comes back (src/policy/borrow.ts).

const META_COLUMNS =
  "c.id, c.team_id, c.owner_user_id, c.service, c.scope, c.channel_id, c.thread_ts, c.status, c.label, " +
  "c.created_by, c.created_at, c.updated_at, c.expires_at, c.ended_at, c.ended_reason";

/**
 * The own-row rule: of the caller's usable rows for a service in a thread, the thread-scoped one
 * first, then the user-scoped one, then the oldest, then by id (bytewise in both stores).
 */
export function ownRowOrder(d: SqlDialect): string {
  return `CASE scope WHEN 'thread' THEN 0 ELSE 1 END, created_at, ${d.bytewise("id")}`;
}

/** The caller's own active, unexpired row for one service usable in one thread, by the own-row rule. */
export function ownRowStatement(q: OwnConnectionQuery, d: SqlDialect): Stmt {
  const t = q.thread;
  return stmt(
    (p) => `SELECT * FROM connections WHERE team_id = ${p(t.teamId)} AND owner_user_id = ${p(q.caller)}
      AND service = ${p(q.service)} AND status = 'active' AND expires_at > ${p(q.now)}
      AND ((scope = 'thread' AND channel_id = ${p(t.channelId)} AND thread_ts = ${p(t.threadTs)}) OR scope = 'user')
      ORDER BY ${ownRowOrder(d)} LIMIT 1`,
  );
}

/** The candidates statement of one query shape (by service or not, own rows here or everywhere, which page). */
export function candidatesStatement(q: CandidateQuery, d: SqlDialect): Stmt {
  const t = q.thread;
  return stmt((p) => {
    const svc = () => (q.service !== undefined ? ` AND service = ${p(q.service)}` : "");
    const team = () => `team_id = ${p(t.teamId)}`;
    const here = () => `channel_id = ${p(t.channelId)} AND thread_ts = ${p(t.threadTs)}`;
    const usable = () => `status = 'active' AND expires_at > ${p(q.now)}`;
    // The partial indexes' own WHERE terms are repeated word for word so the planner can use them.
    const liveUser = "scope = 'user' AND status IN ('active', 'needs_login')";
    const liveShared = "scope = 'shared' AND status IN ('active', 'needs_login')";
    const live = "status IN ('active', 'needs_login')";
    const granted = `EXISTS (SELECT 1 FROM grants g WHERE g.connection_id = c.id AND g.borrower_user_id = ${p(q.caller)}
      AND g.team_id = ${p(t.teamId)} AND g.channel_id = ${p(t.channelId)} AND g.thread_ts = ${p(t.threadTs)}
      AND g.revoked_at IS NULL) AS granted`;
    const given = `CASE WHEN c.owner_user_id = ${p(q.caller)}
      THEN (SELECT count(*) FROM grants g WHERE g.connection_id = c.id AND g.revoked_at IS NULL)
      ELSE 0 END AS grants_given`;
    const own =
      q.own === "here"
        ? `SELECT id FROM connections WHERE ${team()} AND owner_user_id = ${p(q.caller)}
             AND scope = 'thread' AND ${live}
             AND ${here()}${svc()} AND ${usable()}
           UNION SELECT id FROM connections WHERE ${liveUser} AND ${team()} AND owner_user_id = ${p(q.caller)}${svc()}
             AND ${usable()}`
        : `SELECT id FROM connections WHERE ${team()} AND owner_user_id = ${p(q.caller)}${svc()} AND ${live}`;
    const branches = [
      own,
      `SELECT id FROM connections WHERE status = 'active' AND ${team()} AND ${here()}${svc()} AND scope = 'thread'
         AND expires_at > ${p(q.now)}`,
      `SELECT id FROM connections WHERE ${liveUser} AND ${team()}
         AND owner_user_id IN (${d.list.sql.replace("?", p(d.list.value(q.participants)))})${svc()} AND ${usable()}`,
      // Shared rows have no owner: `owner_user_id IS NULL` keeps a lookup without a service off the team's other rows.
      `SELECT id FROM connections WHERE ${liveShared} AND ${team()} AND owner_user_id IS NULL${svc()} AND ${usable()}`,
    ];
    const head = `SELECT ${META_COLUMNS}, ${granted}, ${given} FROM connections c`;
    const body = branches.join("\n UNION ");
    const after = q.after !== undefined ? ` AND ${d.bytewise("c.id")} > ${p(q.after)}` : "";
    return `${head} WHERE c.id IN (${body})${after} ORDER BY ${d.bytewise("c.id")} LIMIT ${p(q.limit)}`;
  });
}
