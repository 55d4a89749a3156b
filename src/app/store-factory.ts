import type { Config } from "../config/env.js";
import { LockKeys } from "../store/postgres/lock-keys.js";
import { connectPostgresStore, openPostgresStore, PostgresStore } from "../store/postgres/pg-store.js";
import type { MigrationReport } from "../store/sqlite/migrator.js";
import { dbCounts, type DbCounts } from "../store/sqlite/db.js";
import { openSqliteStore, SqliteStore } from "../store/sqlite/sqlite-store.js";
import type { Store } from "../store/store.js";
import type { KeyRing } from "../vault/keyring.js";

// The one place that chooses the store adapter: SLAUDE_DATABASE_URL selects PostgreSQL, otherwise
// the SQLite file at SLAUDE_DB_PATH (the embedded default). Everything else sees the Store port.

/**
 * Opens the configured store and applies pending migrations before returning (a server's start-up).
 * `keys` names PostgreSQL's advisory locks (lock-keys.ts), so only holders of the key ring can take them.
 */
export async function openStore(config: Pick<Config, "databaseUrl" | "dbPath" | "dbLockWaitMs">, now: () => number, keys: KeyRing): Promise<{ store: Store; migrations: MigrationReport }> {
  if (config.databaseUrl) return openPostgresStore({ url: config.databaseUrl, lockWaitMs: config.dbLockWaitMs, lockKeys: LockKeys.fromRing(keys) }, now);
  return openSqliteStore(config.dbPath, now, { maxWaitMs: config.dbLockWaitMs });
}

/**
 * Opens the configured store without waiting (the CLI's lazy context): PostgreSQL connects and
 * migrates on first use, and a failed migration fails every query; SQLite migrates at once.
 */
export function connectStore(config: Pick<Config, "databaseUrl" | "dbPath" | "dbLockWaitMs">, now: () => number, keys: () => KeyRing): Store {
  if (config.databaseUrl) return connectPostgresStore({ url: config.databaseUrl, lockWaitMs: config.dbLockWaitMs, lockKeys: LockKeys.fromRing(keys()) }, now).store;
  return openSqliteStore(config.dbPath, now, { maxWaitMs: config.dbLockWaitMs }).store;
}

/** The store's statement and transaction counters for /metrics (SQLite: prepared-statement runs; PostgreSQL: statements sent). */
export function storeCounts(store: Store): Readonly<DbCounts> {
  if (store instanceof SqliteStore) return dbCounts(store.db);
  if (store instanceof PostgresStore) return store.db.counts;
  return { statements: 0, transactions: 0 };
}
