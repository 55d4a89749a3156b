import type { OAuthStateRepo } from "../installation-records.js";
import { checkOAuthState, DEFAULT_MAX_LIVE_OAUTH_STATES } from "../installation-rows.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait, writeTx } from "./db.js";

/** SQLite OAuth install states: hashes only, taken once by one DELETE … RETURNING, capped oldest-first. */
export class SqliteOAuthStateRepo implements OAuthStateRepo {
  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {}

  async put(
    stateHash: string,
    payload: string,
    expiresAt: number,
    at: number,
    maxLive: number = DEFAULT_MAX_LIVE_OAUTH_STATES,
  ): Promise<number> {
    checkOAuthState(stateHash, payload, expiresAt, at, maxLive);
    const dropExpired = this.db.prepare("DELETE FROM oauth_states WHERE expires_at <= ?");
    const live = this.db.prepare("SELECT count(*) AS n FROM oauth_states");
    // The oldest first; the hash breaks ties (states of one millisecond), as PostgreSQL orders them.
    const evict = this.db.prepare(
      "DELETE FROM oauth_states WHERE state_hash IN (SELECT state_hash FROM oauth_states ORDER BY created_at, state_hash LIMIT ?)",
    );
    const insert = this.db.prepare(
      "INSERT INTO oauth_states (state_hash, payload, created_at, expires_at) VALUES (?, ?, ?, ?)",
    );
    return writeTx(
      this.db,
      () => {
        dropExpired.run(at);
        const over = (live.get() as { n: number }).n - (maxLive - 1);
        const evicted = over > 0 ? evict.run(over).changes : 0;
        insert.run(stateHash, payload, at, expiresAt);
        return evicted;
      },
      this.wait,
    );
  }

  async take(stateHash: string, at: number): Promise<string | undefined> {
    const del = this.db.prepare("DELETE FROM oauth_states WHERE state_hash = ? RETURNING payload, expires_at");
    const r = await writeTx(
      this.db,
      () => del.get(stateHash) as { payload: string; expires_at: number } | undefined,
      this.wait,
    );
    // An expired state is deleted all the same: it can never be taken later.
    return r && r.expires_at > at ? r.payload : undefined;
  }

  async expireDue(now: number): Promise<number> {
    const del = this.db.prepare("DELETE FROM oauth_states WHERE expires_at <= ?");
    return writeTx(this.db, () => del.run(now).changes, this.wait);
  }
}
