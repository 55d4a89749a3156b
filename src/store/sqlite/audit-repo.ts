import type { AuditEvent, AuditQuery, AuditRecord, CallSampleQuery, CallSamples } from "../../audit/event.js";
import { AuditBatch } from "../audit-batch.js";
import {
  AUDIT_COLUMNS,
  type AuditRow,
  auditValues,
  type CallSampleRow,
  sampleLimit,
  toCallSample,
  toRecord,
} from "../audit-rows.js";
import type { AuditRepo } from "../store.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait, preparedWriteTx } from "./db.js";

/** Writes audit rows; called inside the transaction of the change they describe. */
export function makeAuditWriter(db: Db): (events: readonly AuditEvent[]) => void {
  // Positional parameters: no object of 18 named values built and looked up per row.
  const insert = db.prepare(
    `INSERT INTO audit (${AUDIT_COLUMNS.map(([c]) => c).join(", ")}) VALUES (${AUDIT_COLUMNS.map(() => "?").join(", ")})`,
  );
  return (events) => {
    for (const e of events) insert.run(...auditValues(e));
  };
}

function whereOf(q: AuditQuery): { sql: string; params: Record<string, unknown> } {
  const clauses: string[] = [];
  const params: Record<string, unknown> = {};
  if (q.since !== undefined) {
    clauses.push("at >= @since");
    params.since = q.since;
  }
  if (q.until !== undefined) {
    clauses.push("at < @until");
    params.until = q.until;
  }
  if (q.teamId) {
    clauses.push("team_id = @teamId");
    params.teamId = q.teamId;
  }
  if (q.userId) {
    clauses.push("(caller_user_id = @userId OR owner_user_id = @userId OR approver_user_id = @userId)");
    params.userId = q.userId;
  }
  if (q.connectionId) {
    clauses.push("connection_id = @connectionId");
    params.connectionId = q.connectionId;
  }
  if (q.service) {
    clauses.push("service = @service");
    params.service = q.service;
  }
  if (q.event) {
    clauses.push("event = @event");
    params.event = q.event;
  }
  if (q.callId) {
    clauses.push("call_id = @callId");
    params.callId = q.callId;
  }
  if (q.afterSeq !== undefined) {
    clauses.push("seq > @afterSeq");
    params.afterSeq = q.afterSeq;
  }
  if (q.seqs) {
    clauses.push("seq IN (SELECT value FROM json_each(@seqs))");
    params.seqs = JSON.stringify(q.seqs.slice(0, 1000));
  }
  return { sql: clauses.length ? `WHERE ${clauses.join(" AND ")}` : "", params };
}

/**
 * SQLite audit repository; appends are group-committed (audit-batch.ts), each commit one run of a
 * transaction function and an INSERT prepared once.
 */
export class SqliteAuditRepo implements AuditRepo {
  private readonly batch: AuditBatch;
  constructor(
    private readonly db: Db,
    wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {
    this.batch = new AuditBatch(preparedWriteTx(db, makeAuditWriter(db), wait));
  }
  /** Resolves once the rows are committed; appends of one event-loop turn share one transaction. */
  async append(events: readonly AuditEvent[]): Promise<void> {
    await this.batch.append(events);
  }
  async query(q: AuditQuery): Promise<AuditRecord[]> {
    const { sql, params } = whereOf(q);
    const limit = q.limit ?? 1000;
    const n = Math.max(1, Math.min(Math.floor(limit), Number.MAX_SAFE_INTEGER));
    const latest = q.take === "latest";
    const rows = this.db
      .prepare(`SELECT * FROM audit ${sql} ORDER BY seq ${latest ? "DESC" : "ASC"} LIMIT ${n}`)
      .all(params) as AuditRow[];
    if (latest) rows.reverse();
    return rows.map(toRecord);
  }
  async count(q: AuditQuery = {}): Promise<number> {
    const { sql, params } = whereOf(q);
    return (this.db.prepare(`SELECT count(*) AS n FROM audit ${sql}`).get(params) as { n: number }).n;
  }
  async callSamples(q: CallSampleQuery): Promise<CallSamples> {
    const n = sampleLimit(q.limit);
    const team = q.teamId === undefined ? "" : "AND team_id = @teamId";
    const params = { since: q.since, until: q.until, ...(q.teamId === undefined ? {} : { teamId: q.teamId }) };
    const rows = this.db
      .prepare(`SELECT at, event, decision, error_code, duration_ms FROM audit
        WHERE at >= @since AND at < @until AND event IN ('call', 'call_denied') ${team}
        ORDER BY at DESC, seq DESC LIMIT ${n + 1}`)
      .all(params) as CallSampleRow[];
    return { samples: rows.slice(0, n).map(toCallSample), truncated: rows.length > n };
  }
}
