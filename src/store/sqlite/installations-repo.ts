import { SQLITE } from "../sql/dialect.js";
import { type Reseal, reencryptInstallations, SqlInstallationRepo } from "../sql/installations.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait } from "./db.js";
import { SqliteRunner, sqliteDriver } from "./sqlite-program.js";

/** SQLite installations repository: src/store/sql/installations.ts, run synchronously. */
export class SqliteInstallationRepo extends SqlInstallationRepo {
  private readonly runner: SqliteRunner;
  constructor(db: Db, wait: LockWait = DEFAULT_LOCK_WAIT) {
    super(sqliteDriver(db, wait));
    this.runner = new SqliteRunner(db);
  }

  /** Re-seals every row holding tokens; must run inside a write transaction (Store.reencryptAll shares it). */
  reencryptInTx(reseal: Reseal): number {
    return this.runner.run(reencryptInstallations(reseal, SQLITE));
  }
}
