import type { OAuthStateRepo } from "../installation-records.js";
import { checkOAuthState, DEFAULT_MAX_LIVE_OAUTH_STATES } from "../installation-rows.js";
import { type SqlDialect, stmt } from "./dialect.js";
import type { SqlDriver } from "./driver.js";
import { changes, lock, type Program, rows } from "./program.js";

// The OAuth install states, once for both adapters (src/store/sql/program.ts): hashes only, taken
// once by one DELETE … RETURNING, capped oldest-first (the caller checks a put first).

/** The lock puts take, so the cap on live states holds across replicas. */
const PUT_LOCK = "slaude-connect:oauth-states";

/** Keeps a state (its hash), evicting the oldest past `maxLive - 1`; returns how many it evicted. */
export function* putOAuthState(
  stateHash: string,
  payload: string,
  expiresAt: number,
  at: number,
  maxLive: number,
  d: SqlDialect,
): Program<number> {
  yield* lock(PUT_LOCK);
  yield* expireOAuthStates(at);
  const [live] = yield* rows<{ n: number }>(stmt(() => "SELECT count(*) AS n FROM oauth_states"));
  const over = Number(live!.n) - (maxLive - 1);
  // The oldest first, ties by hash bytewise (states of one millisecond).
  const evicted =
    over > 0
      ? yield* changes(
          stmt(
            (p) => `DELETE FROM oauth_states WHERE state_hash IN (SELECT state_hash FROM oauth_states
              ORDER BY created_at, ${d.bytewise("state_hash")} LIMIT ${p(over)})`,
          ),
        )
      : 0;
  yield* changes(
    stmt(
      (p) => `INSERT INTO oauth_states (state_hash, payload, created_at, expires_at)
        VALUES (${p(stateHash)}, ${p(payload)}, ${p(at)}, ${p(expiresAt)})`,
    ),
  );
  return evicted;
}

/** Takes a state once: deleted whether or not it expired (it can never be taken later), its payload if live. */
export function* takeOAuthState(stateHash: string, at: number): Program<string | undefined> {
  // One statement: of two replicas taking one state at once, the second waits on the row and finds it gone.
  const [r] = yield* rows<{ payload: string; expires_at: number }>(
    stmt((p) => `DELETE FROM oauth_states WHERE state_hash = ${p(stateHash)} RETURNING payload, expires_at`),
  );
  return r && r.expires_at > at ? r.payload : undefined;
}

/** Deletes the states expired by `now`; returns how many. */
export function* expireOAuthStates(now: number): Program<number> {
  return yield* changes(stmt((p) => `DELETE FROM oauth_states WHERE expires_at <= ${p(now)}`));
}

/** The OAuth install states on either adapter's driver; a put is checked before it runs. */
export class SqlOAuthStateRepo implements OAuthStateRepo {
  constructor(protected readonly driver: SqlDriver) {}
  async put(
    stateHash: string,
    payload: string,
    expiresAt: number,
    at: number,
    maxLive: number = DEFAULT_MAX_LIVE_OAUTH_STATES,
  ): Promise<number> {
    checkOAuthState(stateHash, payload, expiresAt, at, maxLive);
    return this.driver.write(putOAuthState(stateHash, payload, expiresAt, at, maxLive, this.driver.dialect));
  }
  take(stateHash: string, at: number): Promise<string | undefined> {
    return this.driver.write(takeOAuthState(stateHash, at));
  }
  expireDue(now: number): Promise<number> {
    return this.driver.write(expireOAuthStates(now));
  }
}
