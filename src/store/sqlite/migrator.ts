import { fileURLToPath } from "node:url";
import {
  type AppliedMigration,
  INSERT_APPLIED,
  type Migration,
  type MigrationReport,
  migrationFailed,
  migrationReport,
  pendingMigrations,
  readMigrations as readFrom,
  SELECT_APPLIED,
  schemaMigrationsDdl,
} from "../sql/migrations.js";
import type { Db } from "./db.js";

export type { Migration, MigrationReport } from "../sql/migrations.js";

/** The repository's migrations folder. */
export const MIGRATIONS_DIR = fileURLToPath(new URL("../../../migrations/", import.meta.url));

/** Reads the SQLite migrations (`NNNN_*.sql`) from `dir`, ordered by version; duplicate versions are an error. */
export function readMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  return readFrom(dir);
}

/**
 * Applies pending migrations in order, each in its own transaction together with its record in
 * `schema_migrations`. Refuses a database written by a newer version, or an applied migration whose
 * file has since changed.
 */
export function migrate(
  db: Db,
  migrations: readonly Migration[] = readMigrations(),
  now: () => number = Date.now,
): MigrationReport {
  db.exec(schemaMigrationsDdl("INTEGER"));
  const rows = db.prepare(SELECT_APPLIED).all() as AppliedMigration[];
  const record = db.prepare(INSERT_APPLIED);
  const applied: number[] = [];
  for (const m of pendingMigrations(rows, migrations)) {
    try {
      db.transaction(() => {
        db.exec(m.sql);
        record.run(m.version, m.name, m.checksum, now());
      }).immediate();
    } catch (cause) {
      throw migrationFailed(m, cause);
    }
    applied.push(m.version);
  }
  return migrationReport(rows, applied);
}
