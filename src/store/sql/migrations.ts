import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { StoreError } from "../errors.js";

// What both migrators share: the files (`NNNN_name.sql`, forward only), the record of what was
// applied, and the checks before anything is applied. Each adapter applies the pending files in
// its own transactions (SQLite synchronously, PostgreSQL under an advisory lock).

/** A migration file: `NNNN_name.sql`. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  readonly checksum: string;
}

/** What a migration run did. */
export interface MigrationReport {
  readonly applied: number[];
  readonly current: number;
}

/** A row of `schema_migrations`. */
export interface AppliedMigration {
  readonly version: number;
  readonly name: string;
  readonly checksum: string;
}

/** The record table, with the integer type the dialect stores milliseconds in. */
export const schemaMigrationsDdl = (
  millis: "INTEGER" | "BIGINT",
): string => `CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at ${millis} NOT NULL)`;

export const SELECT_APPLIED = "SELECT version, name, checksum FROM schema_migrations ORDER BY version";
export const INSERT_APPLIED = "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)";

/** Reads `NNNN_*.sql` files from `dir`, ordered by version; duplicate versions are an error. */
export function readMigrations(dir: string): Migration[] {
  const out: Migration[] = [];
  for (const file of readdirSync(dir).sort()) {
    const m = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(file);
    if (!m) continue;
    const sql = readFileSync(path.join(dir, file), "utf8");
    out.push({ version: Number(m[1]), name: m[2]!, sql, checksum: createHash("sha256").update(sql).digest("hex") });
  }
  out.sort((a, b) => a.version - b.version);
  for (let i = 1; i < out.length; i++) {
    if (out[i]!.version === out[i - 1]!.version)
      throw new StoreError("migration_failed", `two migrations have version ${out[i]!.version}`);
  }
  return out;
}

/** How a migrator names a migration in its errors (`prefix` is the folder below migrations/, if any). */
export function migrationLabel(m: { version: number; name: string }, prefix = ""): string {
  return `${prefix}${String(m.version).padStart(4, "0")}_${m.name}.sql`;
}

/**
 * The migrations still to apply, after the checks: refuses a database written by a newer version,
 * or an applied migration whose file has since changed.
 */
export function pendingMigrations(
  applied: readonly AppliedMigration[],
  migrations: readonly Migration[],
  prefix = "",
): Migration[] {
  const known = new Map(migrations.map((m) => [m.version, m]));
  const latestKnown = migrations.at(-1)?.version ?? 0;
  for (const row of applied) {
    if (row.version > latestKnown) {
      throw new StoreError(
        "newer_schema",
        `database schema version ${row.version} (${row.name}) is newer than this slaude-connect knows ` +
          `(${latestKnown}); upgrade slaude-connect or restore a backup`,
      );
    }
    const m = known.get(row.version);
    if (m && m.checksum !== row.checksum) {
      const file = migrationLabel(row, prefix);
      throw new StoreError(
        "migration_modified",
        `migration ${file} changed after it was applied; migrations are forward-only: add a new one`,
      );
    }
  }
  const done = new Set(applied.map((r) => r.version));
  return migrations.filter((m) => !done.has(m.version));
}

/** The error of a migration that failed (its changes and its record rolled back with it). */
export function migrationFailed(m: Migration, cause: unknown, prefix = ""): StoreError {
  const why = cause instanceof Error ? cause.message : String(cause);
  return new StoreError("migration_failed", `migration ${migrationLabel(m, prefix)} failed: ${why}`, { cause });
}

/** The report of a run: what it applied and the version the database is at now. */
export function migrationReport(applied: readonly AppliedMigration[], newly: number[]): MigrationReport {
  return { applied: newly, current: Math.max(0, ...applied.map((r) => r.version), ...newly) };
}
