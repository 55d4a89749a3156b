import { StoreError } from "../errors.js";
import { candidatesParams, candidatesSql } from "../sqlite/candidates-query.js";
import type { CandidateQuery, CandidateRow, ConnectionMeta } from "../store.js";
import type { Sql } from "./pg-db.js";

// The candidates query on PostgreSQL is the SQLite statement itself (one home for the rule of who
// may use what), with its dialect differences translated: the participants list is an array
// instead of a JSON document, ids compare bytewise, and named parameters become positional ones.

const SQLITE_PARTICIPANTS = "SELECT value FROM json_each(@participants)";
const PG_PARTICIPANTS = "SELECT unnest(CAST(@participants AS text[]))";

interface MetaRow extends Record<string, unknown> {
  id: string;
  team_id: string;
  owner_user_id: string | null;
  service: string;
  scope: ConnectionMeta["scope"];
  channel_id: string | null;
  thread_ts: string | null;
  status: ConnectionMeta["status"];
  label: string | null;
  created_by: string;
  created_at: number;
  updated_at: number;
  expires_at: number;
  ended_at: number | null;
  ended_reason: string | null;
  granted: boolean;
  grants_given: number;
}

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
  const rows = (await db.query<MetaRow>(text, values)).rows;
  return rows.map((r) => ({
    connection: {
      id: r.id,
      teamId: r.team_id,
      ownerUserId: r.owner_user_id,
      service: r.service,
      scope: r.scope,
      channelId: r.channel_id,
      threadTs: r.thread_ts,
      status: r.status,
      label: r.label,
      createdBy: r.created_by,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
      expiresAt: r.expires_at,
      endedAt: r.ended_at,
      endedReason: r.ended_reason,
    },
    granted: r.granted === true,
    grantsGiven: r.grants_given,
  }));
}
