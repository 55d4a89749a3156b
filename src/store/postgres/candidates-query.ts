import { StoreError } from "../errors.js";
import { candidatesParams, candidatesSql } from "../sqlite/candidates-query.js";
import type { CandidateQuery, CandidateRow } from "../store.js";
import type { Sql } from "./pg-db.js";
import { toCandidate, type CandidateMetaRow } from "../rows.js";

// The candidates query on PostgreSQL is the SQLite statement itself (one home for the rule of who
// may use what), with its dialect differences translated: the participants list is an array
// instead of a JSON document, ids compare bytewise, and named parameters become positional ones.

const SQLITE_PARTICIPANTS = "SELECT value FROM json_each(@participants)";
const PG_PARTICIPANTS = "SELECT unnest(CAST(@participants AS text[]))";


/** The PostgreSQL text and positional values of one candidates query. */
export function pgCandidates(q: CandidateQuery): { text: string; values: unknown[] } {
  const sqlite = candidatesSql(q);
  // Fail loudly if the shared statement changes shape: a silent mismatch would change who may borrow.
  if (!sqlite.includes(SQLITE_PARTICIPANTS) || !sqlite.includes("ORDER BY c.id LIMIT")) throw new StoreError("open_failed", "the candidates statement changed: update src/store/postgres/candidates-query.ts");
  const named = { ...candidatesParams(q), participants: [...q.participants] } as Record<string, unknown>;
  const order: string[] = [];
  // Ids compare bytewise, as in SQLite, whatever the database's collation: pages follow the same order.
  const text = sqlite
    .replace(SQLITE_PARTICIPANTS, PG_PARTICIPANTS)
    .replace("AND c.id > @after", 'AND c.id COLLATE "C" > @after')
    .replace("ORDER BY c.id LIMIT", 'ORDER BY c.id COLLATE "C" LIMIT')
    .replace(/@([A-Za-z]+)/g, (_, name: string) => {
    if (!(name in named)) throw new StoreError("open_failed", `the candidates statement names an unknown parameter @${name}`);
    let i = order.indexOf(name);
    if (i < 0) i = order.push(name) - 1;
    return `$${i + 1}`;
  });
  return { text, values: order.map((n) => named[n]) };
}

/** Runs the candidates query; the sealed-secret columns are never read. */
export async function queryPgCandidates(db: Sql, q: CandidateQuery): Promise<CandidateRow[]> {
  const { text, values } = pgCandidates(q);
  const rows = (await db.query<CandidateMetaRow & Record<string, unknown>>(text, values)).rows;
  return rows.map(toCandidate);
}
