import { SqlApprovalRepo } from "../sql/approvals.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait } from "./db.js";
import { sqliteDriver } from "./sqlite-program.js";

/** SQLite approvals repository: src/store/sql/approvals.ts, run synchronously. */
export class SqliteApprovalRepo extends SqlApprovalRepo {
  constructor(db: Db, wait: LockWait = DEFAULT_LOCK_WAIT) {
    super(sqliteDriver(db, wait));
  }
}
