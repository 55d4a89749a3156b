import type { OAuthStateRepo } from "../installation-records.js";
import { checkOAuthState, DEFAULT_MAX_LIVE_OAUTH_STATES } from "../installation-rows.js";
import { xactLock } from "./lock-keys.js";
import type { PgDb } from "./pg-db.js";

/** The advisory lock puts take, so the cap on live states holds across replicas. */
const PUT_LOCK = "slaude-connect:oauth-states";

/** PostgreSQL OAuth install states, shared by every replica: hashes only, taken once, capped oldest-first. */
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
    return this.db.tx(async (q) => {
      await xactLock(q, this.db.lockKeys, PUT_LOCK);
      await q.query("DELETE FROM oauth_states WHERE expires_at <= $1", [at]);
      const live = (await q.query<{ n: number }>("SELECT count(*)::bigint AS n FROM oauth_states")).rows[0]!.n;
      const over = live - (maxLive - 1);
      let evicted = 0;
      if (over > 0) {
        // The oldest first, ties by hash bytewise (as SQLite orders them).
        evicted =
          (
            await q.query(
              'DELETE FROM oauth_states WHERE state_hash IN (SELECT state_hash FROM oauth_states ORDER BY created_at, state_hash COLLATE "C" LIMIT $1)',
              [over],
            )
          ).rowCount ?? 0;
      }
      await q.query("INSERT INTO oauth_states (state_hash, payload, created_at, expires_at) VALUES ($1, $2, $3, $4)", [
        stateHash,
        payload,
        at,
        expiresAt,
      ]);
      return evicted;
    });
  }

  async take(stateHash: string, at: number): Promise<string | undefined> {
    // One statement: of two replicas taking one state at once, the second waits on the row and finds it gone.
    const r = (
      await this.db.query<{ payload: string; expires_at: number }>(
        "DELETE FROM oauth_states WHERE state_hash = $1 RETURNING payload, expires_at",
        [stateHash],
      )
    ).rows[0];
    return r && r.expires_at > at ? r.payload : undefined;
  }

  async expireDue(now: number): Promise<number> {
    return (await this.db.query("DELETE FROM oauth_states WHERE expires_at <= $1", [now])).rowCount ?? 0;
  }
}
