import type { Statement } from "better-sqlite3";
import { type CandidateMetaRow, toCandidate } from "../rows.js";
import { candidatesStatement } from "../sql/candidates.js";
import { SQLITE } from "../sql/dialect.js";
import type { CandidateQuery, CandidateRow } from "../store.js";
import type { Db } from "./db.js";

// The candidates query on SQLite: the shared statement (src/store/sql/candidates.ts), prepared once per shape.

/** Runs the query with a prepared statement from `prepare` (cached by SQL text by the caller). */
export function queryCandidates(prepare: (sql: string) => Statement<unknown[]>, q: CandidateQuery): CandidateRow[] {
  const s = candidatesStatement(q, SQLITE);
  return (prepare(s.text).all(...s.values) as CandidateMetaRow[]).map(toCandidate);
}

/**
 * For tests and reviews: the steps of the query's plan that read `connections` by anything less
 * than a per-caller, per-thread or per-row key (a full scan, or an index searched by team alone).
 */
export function teamScans(db: Db, q: CandidateQuery): string[] {
  const s = candidatesStatement(q, SQLITE);
  const plan = db.prepare(`EXPLAIN QUERY PLAN ${s.text}`).all(...s.values) as { detail: string }[];
  return plan
    .map((p) => p.detail)
    .filter((d) => /^SCAN (c|connections)\b/.test(d) || /^SEARCH (c|connections) .*\(team_id=\?\)$/.test(d));
}
