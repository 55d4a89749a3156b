import { SqlLoginSessionRepo } from "../sql/login-sessions.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait } from "./db.js";
import { sqliteDriver } from "./sqlite-program.js";

/** SQLite login sessions: src/store/sql/login-sessions.ts, run synchronously. */
export class SqliteLoginSessionRepo extends SqlLoginSessionRepo {
  constructor(db: Db, wait: LockWait = DEFAULT_LOCK_WAIT) {
    super(sqliteDriver(db, wait));
  }
}
