import type { Config } from "../config/env.js";
import { LockKeys } from "../store/postgres/lock-keys.js";
import {
  connectPostgresStore,
  openPostgresStore,
  type PgStoreOptions,
  type PostgresStore,
} from "../store/postgres/pg-store.js";
import type { DbCounts } from "../store/sqlite/db.js";
import type { MigrationReport } from "../store/sqlite/migrator.js";
import { openSqliteStore } from "../store/sqlite/sqlite-store.js";
import type { Store } from "../store/store.js";
import { PostgresTopology } from "../topology/postgres/postgres-topology.js";
import { SingleProcessTopology } from "../topology/single-process.js";
import type { Topology } from "../topology/topology.js";
import type { KeyRing } from "../vault/keyring.js";

// The one place that chooses the deployment: SLAUDE_DATABASE_URL selects PostgreSQL and the replica
// topology on the same database, otherwise the SQLite file at SLAUDE_DB_PATH (the embedded default)
// and one process. Everything else sees the Store and Topology ports.

/** A store and the topology that goes with the database it opened. */
export interface Deployment {
  readonly store: Store;
  readonly topology: Topology;
}

type StoreConfig = Pick<Config, "databaseUrl" | "dbPath" | "dbLockWaitMs">;

function pgOptions(url: string, config: StoreConfig, keys: KeyRing): PgStoreOptions {
  return { url, lockWaitMs: config.dbLockWaitMs, lockKeys: LockKeys.fromRing(keys) };
}

function replicas(store: PostgresStore): Deployment {
  return { store, topology: new PostgresTopology(store.db) };
}

/**
 * Opens the configured store and applies pending migrations before returning (a server's start-up).
 * `keys` names PostgreSQL's advisory locks (lock-keys.ts), so only holders of the key ring can take them.
 */
export async function openStore(
  config: StoreConfig,
  now: () => number,
  keys: KeyRing,
): Promise<Deployment & { migrations: MigrationReport }> {
  if (config.databaseUrl) {
    const { store, migrations } = await openPostgresStore(pgOptions(config.databaseUrl, config, keys), now);
    return { ...replicas(store), migrations };
  }
  const { store, migrations } = openSqliteStore(config.dbPath, now, { maxWaitMs: config.dbLockWaitMs });
  return { store, topology: new SingleProcessTopology(), migrations };
}

/**
 * Opens the configured store without waiting (the CLI's lazy context): PostgreSQL connects and
 * migrates on first use, and a failed migration fails every query; SQLite migrates at once.
 */
export function connectDeployment(config: StoreConfig, now: () => number, keys: () => KeyRing): Deployment {
  if (config.databaseUrl) {
    return replicas(connectPostgresStore(pgOptions(config.databaseUrl, config, keys()), now).store);
  }
  const { store } = openSqliteStore(config.dbPath, now, { maxWaitMs: config.dbLockWaitMs });
  return { store, topology: new SingleProcessTopology() };
}

/** The store alone, as {@link connectDeployment} opens it (commands that never signal other processes). */
export function connectStore(config: StoreConfig, now: () => number, keys: () => KeyRing): Store {
  return connectDeployment(config, now, keys).store;
}

/** The store's statement and transaction counters for /metrics (see `DbCounts`). */
export function storeCounts(store: Store): Readonly<DbCounts> {
  return store.counts();
}
