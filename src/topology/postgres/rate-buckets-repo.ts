import type { AuditEvent } from "../../audit/event.js";
import type { BucketTake, RateBuckets, TakeResult } from "../../limits/call-rate.js";
import { fullAfterMs, retryAtFor } from "../../limits/token-bucket.js";
import { AUDIT_COLUMNS } from "../../store/audit-rows.js";
import { auditInsertParams, auditInsertSql } from "../../store/postgres/audit-repo.js";
import type { PgDb } from "../../store/postgres/pg-db.js";
import { proofShape, provedSql, type RowProof } from "../../store/postgres/row-proof.js";

// The call-rate buckets every replica shares (migrations/postgres/0010_tenant_limits.sql). One statement per call:
// a chain of upserts, each taking a token by the rule of src/limits/token-bucket.ts under the row's
// lock, each running only if the one before it granted. Concurrent replicas serialise on the row.

/** How often (at most) this replica deletes buckets that have refilled completely. */
const SWEEP_EVERY_MS = 60_000;

/** The refill expression of bucket `b` at `$now` for rate parameters `$burst`, `$perMs`. */
const refill = (now: string, burst: string, perMs: string): string =>
  `LEAST(${burst}::float8, b.tokens + GREATEST(0, ${now}::bigint - b.updated_at) * ${perMs}::float8)`;

/**
 * The statement for `n` takes: parameters $1 = now, then key, burst, perMs per take. With `append`,
 * audit rows (one array per column, the parameters after the takes') are inserted by the same
 * statement when the last take was granted (every take before it was, or it would not have run):
 * one statement commits atomically, so granted and written are one fact. With `proofs` (their
 * parameters after the rows'), the first take runs only if every proof holds (row-proof.ts): an
 * unproved call takes nothing and writes nothing, and `proved` says so.
 */
function takeStatement(n: number, append = false, proofs: readonly RowProof[] = []): string {
  const ctes: string[] = [];
  if (proofs.length) {
    const first = 2 + n * 3 + (append ? AUDIT_COLUMNS.length : 0);
    ctes.push(`proof AS (SELECT ${provedSql(proofs, first).sql} AS ok)`);
  }
  for (let i = 0; i < n; i++) {
    const [key, burst, perMs] = [`$${2 + i * 3}`, `$${3 + i * 3}`, `$${4 + i * 3}`];
    const r = refill("$1", burst, perMs);
    const gate =
      i === 0 ? (proofs.length ? " WHERE (SELECT ok FROM proof)" : "") : ` WHERE (SELECT granted FROM c${i - 1})`;
    ctes.push(`c${i} AS (
      INSERT INTO rate_buckets AS b (key, tokens, updated_at, granted)
      SELECT ${key}::text, ${burst}::float8 - 1, $1::bigint, true${gate}
      ON CONFLICT (key) DO UPDATE SET
        tokens = ${r} - CASE WHEN ${r} >= 1 THEN 1 ELSE 0 END,
        updated_at = GREATEST(b.updated_at, $1::bigint),
        granted = ${r} >= 1
      RETURNING tokens, granted)`);
  }
  const cols = Array.from(
    { length: n },
    (_, i) => `(SELECT tokens FROM c${i}) AS t${i}, (SELECT granted FROM c${i}) AS g${i}`,
  );
  if (append) {
    ctes.push(`ins AS (${auditInsertSql(2 + n * 3, `(SELECT granted FROM c${n - 1})`)} RETURNING 1)`);
    cols.push("(SELECT count(*) FROM ins)::int AS written");
  }
  if (proofs.length) cols.push("(SELECT ok FROM proof) AS proved");
  return `WITH ${ctes.join(",\n")}\nSELECT ${cols.join(", ")}`;
}

/** PostgreSQL rate buckets: shared by every replica of one deployment. */
export class PgRateBuckets implements RateBuckets {
  private readonly statements = new Map<string, string>();
  private lastSweep = 0;
  private longestRefillMs = 0;

  constructor(private readonly db: PgDb) {}

  /** Takes in order in one statement, each take only if the one before it was granted (see RateBuckets). */
  async take(takes: readonly BucketTake[], now: number): Promise<TakeResult> {
    if (takes.length === 0) return { granted: true };
    return this.result(takes, now, await this.send(takes, now));
  }

  /**
   * The takes and, when all are granted, `rows` in the same statement (see RateBuckets.takeAndAppend);
   * with `proofs`, only when every proof holds as well (`unproved` otherwise: nothing taken or written).
   */
  async takeAndAppend(
    takes: readonly BucketTake[],
    now: number,
    rows: readonly AuditEvent[],
    proofs: readonly RowProof[] = [],
  ): Promise<TakeResult> {
    if (takes.length === 0) throw new Error("takeAndAppend needs a bucket to take from");
    const row = await this.send(takes, now, rows, proofs);
    if (proofs.length && row.proved !== true) {
      if (Number(row.written) !== 0) throw new Error("an unproved take wrote its rows");
      return { granted: false, unproved: true };
    }
    const r = this.result(takes, now, row);
    // What the statement wrote must be what it granted: anything else is not a verdict to act on.
    if (Number(row.written) !== (r.granted ? rows.length : 0)) throw new Error("rate take and its rows disagree");
    if (r.granted) this.db.counts.transactions++;
    return r;
  }

  private async send(
    takes: readonly BucketTake[],
    now: number,
    rows?: readonly AuditEvent[],
    proofs: readonly RowProof[] = [],
  ): Promise<Record<string, number | boolean | null>> {
    // One text per shape: the takes, the rows, the kinds of proof in order (a bounded set).
    const name = `${takes.length}${rows ? "+rows" : ""}${proofs.length ? `+${proofShape(proofs)}` : ""}`;
    let sql = this.statements.get(name);
    if (!sql) {
      sql = takeStatement(takes.length, rows !== undefined, proofs);
      this.statements.set(name, sql);
    }
    const params: unknown[] = [Math.floor(now)];
    for (const t of takes) params.push(t.key, t.rate.burst, t.rate.perMs);
    if (rows) params.push(...auditInsertParams(rows));
    if (proofs.length) params.push(...provedSql(proofs, params.length + 1).params);
    return (await this.db.query<Record<string, number | boolean | null>>(sql, params)).rows[0] ?? {};
  }

  private result(takes: readonly BucketTake[], now: number, row: Record<string, number | boolean | null>): TakeResult {
    for (const t of takes) this.longestRefillMs = Math.max(this.longestRefillMs, fullAfterMs(t.rate));
    this.maybeSweep(now);
    for (const [i, t] of takes.entries()) {
      if (row[`g${i}`] === true) continue;
      return { granted: false, refused: i, retryAt: retryAtFor(Number(row[`t${i}`] ?? 0), t.rate, now) };
    }
    return { granted: true };
  }

  /** Deletes buckets untouched long enough to be full again (an absent bucket is a full one); returns how many. */
  async sweep(now: number, olderThanMs: number = this.longestRefillMs): Promise<number> {
    return (
      (await this.db.query("DELETE FROM rate_buckets WHERE updated_at < $1", [Math.floor(now - olderThanMs)]))
        .rowCount ?? 0
    );
  }

  /** Keeps the table to the buckets still refilling, off the call's own path (its failure only delays the next sweep). */
  private maybeSweep(now: number): void {
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    void this.sweep(now).catch(() => {});
  }
}
