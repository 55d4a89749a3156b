import { SqlOAuthStateRepo } from "../sql/oauth-states.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait } from "./db.js";
import { sqliteDriver } from "./sqlite-program.js";

/** SQLite OAuth install states: src/store/sql/oauth-states.ts, run synchronously. */
export class SqliteOAuthStateRepo extends SqlOAuthStateRepo {
  constructor(db: Db, wait: LockWait = DEFAULT_LOCK_WAIT) {
    super(sqliteDriver(db, wait));
  }
}
