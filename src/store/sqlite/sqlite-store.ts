import type { AuditEvent } from "../../audit/event.js";
import type { Resealers, RotatedCounts } from "../../vault/rotate.js";
import type { DbCounts, Store } from "../store.js";
import { SqliteApprovalRepo } from "./approvals-repo.js";
import { makeAuditWriter, SqliteAuditRepo } from "./audit-repo.js";
import { SqliteConnectionRepo } from "./connections-repo.js";
import {
  type Db,
  DEFAULT_LOCK_WAIT,
  dbCounts,
  type LockWait,
  openDatabase,
  SERVING_BUSY_TIMEOUT_MS,
  writeTx,
} from "./db.js";
import { SqliteGrantRepo } from "./grants-repo.js";
import { SqliteInstallationRepo } from "./installations-repo.js";
import { SqliteLoginSessionRepo } from "./login-sessions-repo.js";
import { type MigrationReport, migrate } from "./migrator.js";
import { SqliteOAuthStateRepo } from "./oauth-states-repo.js";
import { SqliteResultRepo } from "./results-repo.js";
import { SqliteToolMetadataRepo } from "./tool-metadata-repo.js";
import { SqliteToolPinRepo } from "./tool-pins-repo.js";
import { SqliteWorkspaceRepo } from "./workspace-repo.js";

/** The embedded SQLite store. */
export class SqliteStore implements Store {
  readonly connections: SqliteConnectionRepo;
  readonly grants: SqliteGrantRepo;
  readonly approvals: SqliteApprovalRepo;
  readonly audit: SqliteAuditRepo;
  readonly toolMetadata: SqliteToolMetadataRepo;
  readonly toolPins: SqliteToolPinRepo;
  readonly loginSessions: SqliteLoginSessionRepo;
  readonly workspace: SqliteWorkspaceRepo;
  readonly results: SqliteResultRepo;
  readonly installations: SqliteInstallationRepo;
  readonly oauthStates: SqliteOAuthStateRepo;

  /** Every write waits for another process's lock asynchronously, up to `wait` (the event loop stays free). */
  constructor(
    readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {
    this.connections = new SqliteConnectionRepo(db, wait);
    this.grants = new SqliteGrantRepo(db, wait);
    this.approvals = new SqliteApprovalRepo(db, wait);
    this.audit = new SqliteAuditRepo(db, wait);
    this.toolMetadata = new SqliteToolMetadataRepo(db, wait);
    this.toolPins = new SqliteToolPinRepo(db, wait);
    this.loginSessions = new SqliteLoginSessionRepo(db, wait);
    this.workspace = new SqliteWorkspaceRepo(db, wait);
    this.results = new SqliteResultRepo(db, wait);
    this.installations = new SqliteInstallationRepo(db, wait);
    this.oauthStates = new SqliteOAuthStateRepo(db, wait);
  }

  async reencryptAll(reseal: Resealers, audit: AuditEvent): Promise<RotatedCounts> {
    const write = makeAuditWriter(this.db);
    return writeTx(
      this.db,
      () => {
        const connections = this.connections.reencryptInTx(reseal.connection);
        const installations = this.installations.reencryptInTx(reseal.installation);
        write([audit]);
        return { connections, installations };
      },
      this.wait,
    );
  }

  /** Prepared-statement runs and write transactions of this handle. */
  counts(): Readonly<DbCounts> {
    return dbCounts(this.db);
  }

  async ping(): Promise<boolean> {
    try {
      return (this.db.prepare("SELECT 1 AS ok").get() as { ok: number }).ok === 1;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}

/**
 * Opens the SQLite file, applies pending migrations (waiting for a lock is fine then) and returns
 * the store, whose SQLite busy wait is then cut to a few ms: lock waits are async retries of `wait`.
 */
export function openSqliteStore(
  file: string,
  now: () => number = Date.now,
  wait: LockWait = DEFAULT_LOCK_WAIT,
): { store: SqliteStore; migrations: MigrationReport } {
  const db = openDatabase(file);
  try {
    const migrations = migrate(db, undefined, now);
    db.pragma(`busy_timeout = ${SERVING_BUSY_TIMEOUT_MS}`);
    return { store: new SqliteStore(db, wait), migrations };
  } catch (err) {
    db.close();
    throw err;
  }
}
