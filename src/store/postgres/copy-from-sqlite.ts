import { StoreError } from "../errors.js";
import type { Db } from "../sqlite/db.js";
import { readMigrations } from "../sqlite/migrator.js";
import type { PgDb, Sql } from "./pg-db.js";

// `slaude-connect migrate-store`: copies every table of a SQLite store into an empty PostgreSQL
// store in one transaction. Rows move as they are: ciphertexts stay sealed under the same key ids
// (their binding covers the copied fields, so they open on PostgreSQL with the same keys).

/** The tables copied, parents before children (foreign keys), each with its identity column if any. */
export const COPIED_TABLES: readonly {
  readonly name: string;
  readonly identity?: string;
  readonly orderOnly?: string;
}[] = [
  { name: "connections" },
  { name: "grants" },
  { name: "approvals" },
  { name: "login_sessions" },
  { name: "tool_metadata" },
  { name: "audit", identity: "seq" },
  { name: "workspace_users" },
  { name: "workspace_channels" },
  { name: "workspace_members" },
  // `seq` stands in for SQLite's rowid: filled by the copy in rowid order.
  { name: "workspace_threads", orderOnly: "seq" },
  { name: "workspace_notes", identity: "id" },
  { name: "workspace_inbox", orderOnly: "seq" },
  { name: "stored_results" },
  { name: "tool_pins" },
  { name: "installations" },
  { name: "oauth_states" },
];

/** SQLite's own bookkeeping, not data. */
const NOT_DATA = new Set(["schema_migrations", "sqlite_sequence"]);

const BATCH = 500;

/**
 * Columns only PostgreSQL has, about replicas (SQLite is one process): not copied, left NULL.
 * `login_sessions.holder_url` (0007): a copied flow is held by no replica; its viewer's next load opens it where it lands.
 */
const PG_ONLY_COLUMNS: Readonly<Record<string, readonly string[]>> = { login_sessions: ["holder_url"] };

/** Rows per table in the source and the target after the copy. */
export interface CopyReport {
  readonly tables: readonly { readonly name: string; readonly source: number; readonly target: number }[];
}

async function pgColumns(q: Sql, table: string): Promise<string[]> {
  const rows = (
    await q.query<{ column_name: string }>(
      "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position",
      [table],
    )
  ).rows;
  return rows.map((r) => r.column_name);
}

async function copyTable(
  q: Sql,
  src: Db,
  table: string,
  identity: string | undefined,
  orderOnly: string | undefined,
): Promise<void> {
  const pgOnly = PG_ONLY_COLUMNS[table] ?? [];
  const columns = (await pgColumns(q, table)).filter((c) => c !== orderOnly && !pgOnly.includes(c));
  const sqliteColumns = new Set(
    (src.prepare(`SELECT name FROM pragma_table_info(?)`).all(table) as { name: string }[]).map((r) => r.name),
  );
  const missing = columns.filter((c) => !sqliteColumns.has(c));
  const extra = [...sqliteColumns].filter((c) => !columns.includes(c));
  if (missing.length || extra.length) {
    throw new StoreError(
      "migration_failed",
      `table ${table} differs between the stores (only in PostgreSQL: ${missing.join(", ") || "-"}; only in SQLite: ${extra.join(", ") || "-"})`,
    );
  }
  const list = columns.join(", ");
  const stmt = src.prepare(`SELECT ${list} FROM ${table} ORDER BY rowid`);
  let batch: unknown[][] = [];
  const flush = async (): Promise<void> => {
    if (!batch.length) return;
    const values: unknown[] = [];
    const tuples = batch.map(
      (row) =>
        `(${row
          .map((v) => {
            values.push(v);
            return `$${values.length}`;
          })
          .join(", ")})`,
    );
    // OVERRIDING SYSTEM VALUE is harmless for BY DEFAULT identities and keeps SQLite's numbers.
    await q.query(
      `INSERT INTO ${table} (${list}) ${identity ? "OVERRIDING SYSTEM VALUE " : ""}VALUES ${tuples.join(", ")}`,
      values,
    );
    batch = [];
  };
  for (const row of stmt.raw().iterate() as Iterable<unknown[]>) {
    batch.push(row);
    if (batch.length >= BATCH) await flush();
  }
  await flush();
  if (identity)
    await q.query(
      `SELECT setval(pg_get_serial_sequence($1, $2), GREATEST((SELECT max(${identity}) FROM ${table}), 1), (SELECT count(*) > 0 FROM ${table}))`,
      [table, identity],
    );
}

/**
 * Copies every table of `src` (a SQLite store at the latest schema) into `target` (a migrated,
 * empty PostgreSQL store) in one transaction, then compares row counts per table. Refuses a target
 * that holds any row, a source at another schema version, or a source table it does not know.
 */
export async function copySqliteToPostgres(src: Db, target: PgDb): Promise<CopyReport> {
  const latest = readMigrations().at(-1)?.version ?? 0;
  const version = (src.prepare("SELECT max(version) AS v FROM schema_migrations").get() as { v: number | null }).v ?? 0;
  if (version !== latest)
    throw new StoreError(
      "migration_failed",
      `the SQLite file is at schema ${version}, this slaude-connect at ${latest}: run \`slaude-connect migrate\` on it first`,
    );
  const tables = (
    src.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as {
      name: string;
    }[]
  )
    .map((r) => r.name)
    .filter((n) => !NOT_DATA.has(n));
  const unknown = tables.filter((t) => !COPIED_TABLES.some((c) => c.name === t));
  if (unknown.length)
    throw new StoreError(
      "migration_failed",
      `the SQLite file has tables this copy does not know: ${unknown.join(", ")}`,
    );
  const count = (t: string): number => (src.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n;
  await target.tx(async (q) => {
    for (const t of COPIED_TABLES) {
      const n = (await q.query<{ n: number }>(`SELECT count(*) AS n FROM ${t.name}`)).rows[0]!.n;
      if (n > 0)
        throw new StoreError(
          "migration_failed",
          `the PostgreSQL table ${t.name} already holds ${n} row(s): migrate-store copies into an empty database only`,
        );
    }
    for (const t of COPIED_TABLES) await copyTable(q, src, t.name, t.identity, t.orderOnly);
  });
  const out: { name: string; source: number; target: number }[] = [];
  for (const t of COPIED_TABLES) {
    out.push({
      name: t.name,
      source: count(t.name),
      target: (await target.query<{ n: number }>(`SELECT count(*) AS n FROM ${t.name}`)).rows[0]!.n,
    });
  }
  return { tables: out };
}
