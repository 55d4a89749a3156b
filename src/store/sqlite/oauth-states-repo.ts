import type { OAuthStateRepo } from "../installation-records.js";
import { checkOAuthState, DEFAULT_MAX_LIVE_OAUTH_STATES } from "../installation-rows.js";
import { SQLITE } from "../sql/dialect.js";
import * as ops from "../sql/oauth-states.js";
import type { Program } from "../sql/program.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait, writeTx } from "./db.js";
import { SqliteRunner } from "./sqlite-program.js";

/** SQLite OAuth install states: the shared statements of src/store/sql/oauth-states.ts. */
export class SqliteOAuthStateRepo implements OAuthStateRepo {
  private readonly runner: SqliteRunner;

  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {
    this.runner = new SqliteRunner(db);
  }

  private write<T>(p: Program<T>): Promise<T> {
    return writeTx(this.db, () => this.runner.run(p), this.wait);
  }

  async put(
    stateHash: string,
    payload: string,
    expiresAt: number,
    at: number,
    maxLive: number = DEFAULT_MAX_LIVE_OAUTH_STATES,
  ): Promise<number> {
    checkOAuthState(stateHash, payload, expiresAt, at, maxLive);
    return this.write(ops.putOAuthState(stateHash, payload, expiresAt, at, maxLive, SQLITE));
  }

  async take(stateHash: string, at: number): Promise<string | undefined> {
    return this.write(ops.takeOAuthState(stateHash, at));
  }

  async expireDue(now: number): Promise<number> {
    return this.write(ops.expireOAuthStates(now));
  }
}
