import type { Config } from "../config/env.js";
import type { DbCounts } from "../store/sqlite/db.js";
import type { MigrationReport } from "../store/sqlite/migrator.js";
import { openSqliteStore } from "../store/sqlite/sqlite-store.js";
import type { Store } from "../store/store.js";
import { SingleProcessTopology } from "../topology/single-process.js";
import type { Topology } from "../topology/topology.js";
import type { KeyRing } from "../vault/keyring.js";

// The one place that chooses the deployment: SLAUDE_DATABASE_URL selects PostgreSQL and the replica
// topology on the same database, otherwise the SQLite file at SLAUDE_DB_PATH (the embedded default)
// and one process. Everything else sees the Store and Topology ports. The PostgreSQL side
// (postgres-deployment.ts, with `pg`) is imported only when the URL is set: a SQLite server never
// loads it. The CLI's synchronous opener is in store-connect.ts.

/** A store and the topology that goes with the database it opened. */
export interface Deployment {
  readonly store: Store;
  readonly topology: Topology;
}

export type StoreConfig = Pick<Config, "databaseUrl" | "dbPath" | "dbLockWaitMs">;

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
    const { openPostgresDeployment } = await import("./postgres-deployment.js");
    return openPostgresDeployment(config.databaseUrl, config, now, keys);
  }
  const { store, migrations } = openSqliteStore(config.dbPath, now, { maxWaitMs: config.dbLockWaitMs });
  return { store, topology: new SingleProcessTopology(), migrations };
}

/** The store's statement and transaction counters for /metrics (see `DbCounts`). */
export function storeCounts(store: Store): Readonly<DbCounts> {
  return store.counts();
}
