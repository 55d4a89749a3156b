import { openSqliteStore } from "../store/sqlite/sqlite-store.js";
import type { Store } from "../store/store.js";
import { SingleProcessTopology } from "../topology/single-process.js";
import type { KeyRing } from "../vault/keyring.js";
import { connectPostgresDeployment } from "./postgres-deployment.js";
import type { Deployment, StoreConfig } from "./store-factory.js";

// The CLI's store opener, synchronous so commands open the store on first use. It loads the
// PostgreSQL side at once, so `serve` (which opens its store through store-factory.ts) never imports
// this module; the CLI loads it only for the commands that take a store.

/** The signature of {@link connectDeployment}, for the CLI context that is handed it. */
export type DeploymentConnector = (config: StoreConfig, now: () => number, keys: () => KeyRing) => Deployment;

/**
 * Opens the configured store without waiting (the CLI's lazy context): PostgreSQL connects and
 * migrates on first use, and a failed migration fails every query; SQLite migrates at once.
 */
export const connectDeployment: DeploymentConnector = (config, now, keys) => {
  if (config.databaseUrl) return connectPostgresDeployment(config.databaseUrl, config, now, keys());
  const { store } = openSqliteStore(config.dbPath, now, { maxWaitMs: config.dbLockWaitMs });
  return { store, topology: new SingleProcessTopology() };
};

/** The store alone, as {@link connectDeployment} opens it (commands that never signal other processes). */
export function connectStore(config: StoreConfig, now: () => number, keys: () => KeyRing): Store {
  return connectDeployment(config, now, keys).store;
}
