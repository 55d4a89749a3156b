import { type CandidateMetaRow, toCandidate } from "../rows.js";
import { candidatesStatement } from "../sql/candidates.js";
import { POSTGRES } from "../sql/dialect.js";
import type { CandidateQuery, CandidateRow } from "../store.js";
import type { Sql } from "./pg-db.js";

// The candidates query on PostgreSQL: the shared statement (src/store/sql/candidates.ts) in its dialect.

/** Runs the candidates query; the sealed-secret columns are never read. */
export async function queryPgCandidates(db: Sql, q: CandidateQuery): Promise<CandidateRow[]> {
  const s = candidatesStatement(q, POSTGRES);
  const found = await db.query<CandidateMetaRow & Record<string, unknown>>(POSTGRES.placeholders(s.text), s.values);
  return found.rows.map(toCandidate);
}
