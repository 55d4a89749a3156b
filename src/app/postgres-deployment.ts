import type { Config } from "../config/env.js";
import { LockKeys } from "../store/postgres/lock-keys.js";
import {
  connectPostgresStore,
  openPostgresStore,
  type PgStoreOptions,
  type PostgresStore,
} from "../store/postgres/pg-store.js";
import type { MigrationReport } from "../store/sqlite/migrator.js";
import { PostgresTopology } from "../topology/postgres/postgres-topology.js";
import type { KeyRing } from "../vault/keyring.js";
import type { Deployment } from "./store-factory.js";

// The PostgreSQL deployment: its store and the replica topology on the same database. Only
// store-factory.ts (when SLAUDE_DATABASE_URL is set) and store-connect.ts load this module, so a
// SQLite broker never loads `pg` and the PostgreSQL store.

type StoreConfig = Pick<Config, "dbLockWaitMs">;

function pgOptions(url: string, config: StoreConfig, keys: KeyRing): PgStoreOptions {
  return { url, lockWaitMs: config.dbLockWaitMs, lockKeys: LockKeys.fromRing(keys) };
}

function replicas(store: PostgresStore): Deployment {
  return { store, topology: new PostgresTopology(store.db) };
}

/** Opens the PostgreSQL store at `url` and applies pending migrations before returning. */
export async function openPostgresDeployment(
  url: string,
  config: StoreConfig,
  now: () => number,
  keys: KeyRing,
): Promise<Deployment & { migrations: MigrationReport }> {
  const { store, migrations } = await openPostgresStore(pgOptions(url, config, keys), now);
  return { ...replicas(store), migrations };
}

/** The PostgreSQL store at `url`, connecting and migrating on first use. */
export function connectPostgresDeployment(
  url: string,
  config: StoreConfig,
  now: () => number,
  keys: KeyRing,
): Deployment {
  return replicas(connectPostgresStore(pgOptions(url, config, keys), now).store);
}
