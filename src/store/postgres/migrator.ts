import { fileURLToPath } from "node:url";
import { StoreError } from "../errors.js";
import { readMigrations, type Migration, type MigrationReport } from "../sqlite/migrator.js";
import type { PgDb, Sql } from "./pg-db.js";

/** The PostgreSQL migrations folder, beside the SQLite ones. */
export const PG_MIGRATIONS_DIR = fileURLToPath(new URL("../../../migrations/postgres/", import.meta.url));

/** The advisory lock every replica takes to migrate: the first one applies, the others wait and find nothing to do. */
export const MIGRATION_LOCK = "slaude-connect:migrations";

/** Reads the PostgreSQL migrations (`NNNN_*.sql`, as for SQLite). */
export function readPgMigrations(dir: string = PG_MIGRATIONS_DIR): Migration[] {
  return readMigrations(dir);
}

const label = (m: { version: number; name: string }): string => `${String(m.version).padStart(4, "0")}_${m.name}.sql`;

async function applyPending(q: Sql, migrations: readonly Migration[], now: () => number): Promise<MigrationReport> {
  await q.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at BIGINT NOT NULL)`);
  const rows = (await q.query<{ version: number; name: string; checksum: string }>("SELECT version, name, checksum FROM schema_migrations ORDER BY version")).rows;
  const known = new Map(migrations.map((m) => [m.version, m]));
  const latestKnown = migrations.at(-1)?.version ?? 0;
  for (const row of rows) {
    if (row.version > latestKnown) {
      throw new StoreError(
        "newer_schema",
        `database schema version ${row.version} (${row.name}) is newer than this slaude-connect knows (${latestKnown}); upgrade slaude-connect or restore a backup`,
      );
    }
    const m = known.get(row.version);
    if (m && m.checksum !== row.checksum) {
      throw new StoreError("migration_modified", `migration postgres/${label(row)} changed after it was applied; migrations are forward-only: add a new one`);
    }
  }
  const done = new Set(rows.map((r) => r.version));
  const applied: number[] = [];
  for (const m of migrations) {
    if (done.has(m.version)) continue;
    try {
      // PostgreSQL DDL is transactional: a failing migration leaves neither its changes nor its record.
      await q.query("BEGIN");
      await q.query(m.sql);
      await q.query("INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)", [m.version, m.name, m.checksum, now()]);
      await q.query("COMMIT");
    } catch (cause) {
      await q.query("ROLLBACK").catch(() => {});
      throw new StoreError("migration_failed", `migration postgres/${label(m)} failed: ${(cause as Error).message}`, { cause });
    }
    applied.push(m.version);
  }
  return { applied, current: Math.max(0, ...rows.map((r) => r.version), ...applied) };
}

/**
 * Applies pending migrations under the session advisory lock MIGRATION_LOCK, each in its own
 * transaction with its row in `schema_migrations`; replicas starting together migrate once.
 * Refuses a newer schema or an applied migration whose file has changed, as the SQLite migrator does.
 */
export async function migratePg(db: PgDb, migrations: readonly Migration[] = readPgMigrations(), now: () => number = Date.now): Promise<MigrationReport> {
  return db.withSessionLock(MIGRATION_LOCK, (q) => applyPending(q, migrations, now));
}
