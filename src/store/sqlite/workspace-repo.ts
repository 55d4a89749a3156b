import { SqlWorkspaceRepo } from "../sql/workspace-repo.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait } from "./db.js";
import { sqliteDriver } from "./sqlite-program.js";

/** SQLite state of the local workspace: src/store/sql/workspace-repo.ts, run synchronously. */
export class SqliteWorkspaceRepo extends SqlWorkspaceRepo {
  constructor(db: Db, wait: LockWait = DEFAULT_LOCK_WAIT) {
    super(sqliteDriver(db, wait));
  }
}
