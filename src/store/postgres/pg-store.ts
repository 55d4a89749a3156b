import type { AuditEvent } from "../../audit/event.js";
import type { Resealers, RotatedCounts } from "../../vault/rotate.js";
import type { MigrationReport } from "../sqlite/migrator.js";
import type { DbCounts, Store } from "../store.js";
import { PgApprovalRepo } from "./approvals-repo.js";
import { PgAuditRepo, writeAudit } from "./audit-repo.js";
import { PgConnectionRepo, reencryptConnections } from "./connections-repo.js";
import { PgGrantRepo } from "./grants-repo.js";
import { PgInstallationRepo, reencryptInstallations } from "./installations-repo.js";
import { PgLoginSessionRepo } from "./login-sessions-repo.js";
import { migratePg } from "./migrator.js";
import { PgOAuthStateRepo } from "./oauth-states-repo.js";
import { PgDb, type PgDbOptions } from "./pg-db.js";
import { PgResultRepo } from "./results-repo.js";
import { PgToolMetadataRepo } from "./tool-metadata-repo.js";
import { PgToolPinRepo } from "./tool-pins-repo.js";
import { PgWorkspaceRepo } from "./workspace-repo.js";

/**
 * The PostgreSQL store: the same contract as SqliteStore, shared by every replica of one deployment.
 * What only replicas need on this database (locks, signals, turns, session records) is the
 * PostgreSQL topology (src/topology/postgres), built on the same PgDb.
 */
export class PostgresStore implements Store {
  readonly connections: PgConnectionRepo;
  readonly grants: PgGrantRepo;
  readonly approvals: PgApprovalRepo;
  readonly audit: PgAuditRepo;
  readonly toolMetadata: PgToolMetadataRepo;
  readonly loginSessions: PgLoginSessionRepo;
  readonly workspace: PgWorkspaceRepo;
  readonly results: PgResultRepo;
  readonly toolPins: PgToolPinRepo;
  readonly installations: PgInstallationRepo;
  readonly oauthStates: PgOAuthStateRepo;

  constructor(readonly db: PgDb) {
    this.connections = new PgConnectionRepo(db);
    this.grants = new PgGrantRepo(db);
    this.approvals = new PgApprovalRepo(db);
    this.audit = new PgAuditRepo(db);
    this.toolMetadata = new PgToolMetadataRepo(db);
    this.loginSessions = new PgLoginSessionRepo(db);
    this.workspace = new PgWorkspaceRepo(db);
    this.results = new PgResultRepo(db);
    this.toolPins = new PgToolPinRepo(db);
    this.installations = new PgInstallationRepo(db);
    this.oauthStates = new PgOAuthStateRepo(db);
  }

  async reencryptAll(reseal: Resealers, audit: AuditEvent): Promise<RotatedCounts> {
    return this.db.tx(async (q) => {
      const connections = await reencryptConnections(q, reseal.connection);
      const installations = await reencryptInstallations(q, reseal.installation);
      await writeAudit(q, [audit]);
      return { connections, installations };
    });
  }

  /** Statements sent and transactions committed through the pool. */
  counts(): Readonly<DbCounts> {
    return this.db.counts;
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.db.query<{ ok: number }>("SELECT 1 AS ok")).rows[0]?.ok === 1;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}

/** A store's connection options, and how long its start-up waits for the migrations lock (default MIGRATION_LOCK_WAIT_MS). */
export interface PgStoreOptions extends PgDbOptions {
  readonly migrationLockWaitMs?: number;
}

/**
 * Connects to `opts.url` and returns the store at once; its first query waits for the migrations
 * (run under the advisory lock), and if they fail every query fails with their error. `migrations`
 * settles with the report: a server awaits it before serving, so a bad database stops start-up.
 */
export function connectPostgresStore(
  opts: PgStoreOptions,
  now: () => number = Date.now,
): { store: PostgresStore; migrations: Promise<MigrationReport> } {
  const db = new PgDb(opts);
  const migrations = migratePg(db, undefined, now, opts.migrationLockWaitMs);
  db.setGate(migrations);
  return { store: new PostgresStore(db), migrations };
}

/** Connects, migrates, and returns the store; closes the pool and rethrows when the migrations fail. */
export async function openPostgresStore(
  opts: PgStoreOptions,
  now: () => number = Date.now,
): Promise<{ store: PostgresStore; migrations: MigrationReport }> {
  const { store, migrations } = connectPostgresStore(opts, now);
  try {
    return { store, migrations: await migrations };
  } catch (err) {
    await store.close();
    throw err;
  }
}
