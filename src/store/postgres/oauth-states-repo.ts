import type { OAuthStateRepo } from "../installation-records.js";
import { checkOAuthState, DEFAULT_MAX_LIVE_OAUTH_STATES } from "../installation-rows.js";
import { POSTGRES } from "../sql/dialect.js";
import * as ops from "../sql/oauth-states.js";
import type { PgDb } from "./pg-db.js";
import { runPg } from "./pg-program.js";

/** PostgreSQL OAuth install states, shared by every replica: the statements of src/store/sql/oauth-states.ts. */
export class PgOAuthStateRepo implements OAuthStateRepo {
  constructor(private readonly db: PgDb) {}

  async put(
    stateHash: string,
    payload: string,
    expiresAt: number,
    at: number,
    maxLive: number = DEFAULT_MAX_LIVE_OAUTH_STATES,
  ): Promise<number> {
    checkOAuthState(stateHash, payload, expiresAt, at, maxLive);
    return this.db.tx((q) =>
      runPg(q, this.db.lockKeys, ops.putOAuthState(stateHash, payload, expiresAt, at, maxLive, POSTGRES)),
    );
  }

  /** One statement each: the pool's autocommit is its transaction. */
  async take(stateHash: string, at: number): Promise<string | undefined> {
    return runPg(this.db, null, ops.takeOAuthState(stateHash, at));
  }

  async expireDue(now: number): Promise<number> {
    return runPg(this.db, null, ops.expireOAuthStates(now));
  }
}
