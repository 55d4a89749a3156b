import { errorMessage } from "../../domain/errors.js";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { StoreError } from "../errors.js";
import type { Db } from "./db.js";

/** The repository's migrations folder. */
export const MIGRATIONS_DIR = fileURLToPath(new URL("../../../migrations/", import.meta.url));

/** A migration file: `NNNN_name.sql`. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
  readonly checksum: string;
}

/** Reads `NNNN_*.sql` files from `dir`, ordered by version; duplicate versions are an error. */
export function readMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  const out: Migration[] = [];
  for (const file of readdirSync(dir).sort()) {
    const m = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(file);
    if (!m) continue;
    const sql = readFileSync(path.join(dir, file), "utf8");
    out.push({ version: Number(m[1]), name: m[2]!, sql, checksum: createHash("sha256").update(sql).digest("hex") });
  }
  out.sort((a, b) => a.version - b.version);
  for (let i = 1; i < out.length; i++) {
    if (out[i]!.version === out[i - 1]!.version) throw new StoreError("migration_failed", `two migrations have version ${out[i]!.version}`);
  }
  return out;
}

/** What a migration run did. */
export interface MigrationReport {
  readonly applied: number[];
  readonly current: number;
}

/**
 * Applies pending migrations in order, each in its own transaction together with its record in
 * `schema_migrations`. Refuses a database written by a newer version, or an applied migration whose
 * file has since changed.
 */
export function migrate(db: Db, migrations: readonly Migration[] = readMigrations(), now: () => number = Date.now): MigrationReport {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  const rows = db.prepare("SELECT version, name, checksum FROM schema_migrations ORDER BY version").all() as {
    version: number;
    name: string;
    checksum: string;
  }[];
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
      throw new StoreError("migration_modified", `migration ${String(row.version).padStart(4, "0")}_${row.name}.sql changed after it was applied; migrations are forward-only: add a new one`);
    }
  }
  const done = new Set(rows.map((r) => r.version));
  const applied: number[] = [];
  const record = db.prepare("INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)");
  for (const m of migrations) {
    if (done.has(m.version)) continue;
    try {
      db.transaction(() => {
        db.exec(m.sql);
        record.run(m.version, m.name, m.checksum, now());
      }).immediate();
    } catch (cause) {
      throw new StoreError("migration_failed", `migration ${String(m.version).padStart(4, "0")}_${m.name}.sql failed: ${errorMessage(cause)}`, { cause });
    }
    applied.push(m.version);
  }
  return { applied, current: Math.max(0, ...rows.map((r) => r.version), ...applied) };
}
