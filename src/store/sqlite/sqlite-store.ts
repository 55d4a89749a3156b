import type { Store } from "../store.js";
import { SqliteApprovalRepo } from "./approvals-repo.js";
import { SqliteAuditRepo } from "./audit-repo.js";
import { SqliteConnectionRepo } from "./connections-repo.js";
import { openDatabase, type Db } from "./db.js";
import { SqliteGrantRepo } from "./grants-repo.js";
import { SqliteLoginSessionRepo } from "./login-sessions-repo.js";
import { migrate, type MigrationReport } from "./migrator.js";
import { SqliteToolMetadataRepo } from "./tool-metadata-repo.js";

/** The embedded SQLite store. */
export class SqliteStore implements Store {
  readonly connections: SqliteConnectionRepo;
  readonly grants: SqliteGrantRepo;
  readonly approvals: SqliteApprovalRepo;
  readonly audit: SqliteAuditRepo;
  readonly toolMetadata: SqliteToolMetadataRepo;
  readonly loginSessions: SqliteLoginSessionRepo;

  constructor(readonly db: Db) {
    this.connections = new SqliteConnectionRepo(db);
    this.grants = new SqliteGrantRepo(db);
    this.approvals = new SqliteApprovalRepo(db);
    this.audit = new SqliteAuditRepo(db);
    this.toolMetadata = new SqliteToolMetadataRepo(db);
    this.loginSessions = new SqliteLoginSessionRepo(db);
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

/** Opens the SQLite file, applies pending migrations and returns the store. */
export function openSqliteStore(file: string, now: () => number = Date.now): { store: SqliteStore; migrations: MigrationReport } {
  const db = openDatabase(file);
  try {
    const migrations = migrate(db, undefined, now);
    return { store: new SqliteStore(db), migrations };
  } catch (err) {
    db.close();
    throw err;
  }
}
