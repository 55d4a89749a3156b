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
import type { PgDb, Sql } from "./pg-db.js";

/**
 * The INSERT of audit rows as one array per column, its parameters numbered from `$first`: one text
 * whatever the number of rows (prepared once, however rows are batched), `where` gating it.
 */
export function auditInsertSql(first = 1, where = ""): string {
  const arrays = AUDIT_COLUMNS.map(([, t], i) => `$${first + i}::${t}[]`).join(", ");
  return `INSERT INTO audit (${AUDIT_COLUMNS.map(([c]) => c).join(", ")})
  SELECT * FROM unnest(${arrays})${where ? ` WHERE ${where}` : ""}`;
}

/** The parameters of auditInsertSql for `events`: one array per column. */
export function auditInsertParams(events: readonly AuditEvent[]): unknown[][] {
  const columns: unknown[][] = AUDIT_COLUMNS.map(() => new Array(events.length));
  events.forEach((e, i) => {
    const row = auditValues(e);
    for (let k = 0; k < row.length; k++) columns[k]![i] = row[k];
  });
  return columns;
}

const INSERT = auditInsertSql();

/** Writes audit rows with `q`: pass the client of the transaction making the change they describe. */
export async function writeAudit(q: Sql, events: readonly AuditEvent[]): Promise<void> {
  if (!events.length) return;
  await q.query(INSERT, auditInsertParams(events));
}

function whereOf(q: AuditQuery): { sql: string; params: unknown[] } {
  const clauses: string[] = [];
  const params: unknown[] = [];
  const p = (v: unknown): string => {
    params.push(v);
    return `$${params.length}`;
  };
  if (q.since !== undefined) clauses.push(`at >= ${p(q.since)}`);
  if (q.until !== undefined) clauses.push(`at < ${p(q.until)}`);
  if (q.teamId) clauses.push(`team_id = ${p(q.teamId)}`);
  if (q.userId) {
    const u = p(q.userId);
    clauses.push(`(caller_user_id = ${u} OR owner_user_id = ${u} OR approver_user_id = ${u})`);
  }
  if (q.connectionId) clauses.push(`connection_id = ${p(q.connectionId)}`);
  if (q.service) clauses.push(`service = ${p(q.service)}`);
  if (q.event) clauses.push(`event = ${p(q.event)}`);
  if (q.callId) clauses.push(`call_id = ${p(q.callId)}`);
  if (q.afterSeq !== undefined) clauses.push(`seq > ${p(q.afterSeq)}`);
  if (q.seqs) clauses.push(`seq = ANY(${p(q.seqs.slice(0, 1000))}::bigint[])`);
  return { sql: clauses.length ? `WHERE ${clauses.join(" AND ")}` : "", params };
}

/**
 * PostgreSQL audit repository; the table refuses UPDATE, DELETE and TRUNCATE (migration 0001's triggers).
 * Appends are group-committed (audit-batch.ts, serial): each commit is one INSERT of all its rows sent on
 * its own (a single statement commits atomically: one round trip, no BEGIN/COMMIT), one in flight
 * at a time, the rows appended meanwhile sharing the next.
 */
export class PgAuditRepo implements AuditRepo {
  private readonly batch: AuditBatch;
  constructor(private readonly db: PgDb) {
    this.batch = new AuditBatch(
      async (events) => {
        await writeAudit(db, events);
        // Committed by itself: counted with the transactions (`slaude_db_transactions_total`).
        db.counts.transactions++;
      },
      { serial: true },
    );
  }
  /** Resolves once the rows are committed (each caller waits for its own). */
  async append(events: readonly AuditEvent[]): Promise<void> {
    await this.batch.append(events);
  }
  async query(q: AuditQuery): Promise<AuditRecord[]> {
    const { sql, params } = whereOf(q);
    const n = Math.max(1, Math.min(Math.floor(q.limit ?? 1000), Number.MAX_SAFE_INTEGER));
    const latest = q.take === "latest";
    const rows = (
      await this.db.query<AuditRow>(
        `SELECT * FROM audit ${sql} ORDER BY seq ${latest ? "DESC" : "ASC"} LIMIT ${n}`,
        params,
      )
    ).rows;
    if (latest) rows.reverse();
    return rows.map(toRecord);
  }
  async count(q: AuditQuery = {}): Promise<number> {
    const { sql, params } = whereOf(q);
    return (await this.db.query<{ n: number }>(`SELECT count(*) AS n FROM audit ${sql}`, params)).rows[0]!.n;
  }
  async callSamples(q: CallSampleQuery): Promise<CallSamples> {
    const n = sampleLimit(q.limit);
    const params: unknown[] = [q.since, q.until];
    const team = q.teamId === undefined ? "" : `AND team_id = $${params.push(q.teamId)}`;
    const sql = `SELECT at, event, decision, error_code, duration_ms FROM audit
      WHERE at >= $1 AND at < $2 AND event IN ('call', 'call_denied') ${team}
      ORDER BY at DESC, seq DESC LIMIT ${n + 1}`;
    const rows = (await this.db.query<CallSampleRow>(sql, params)).rows;
    return { samples: rows.slice(0, n).map(toCallSample), truncated: rows.length > n };
  }
}
