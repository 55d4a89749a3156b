import type { HeldLock, LeaderLocks } from "../../jobs/leadership.js";
import type { RefreshLock } from "../../login/oauth/refresh-lock.js";
import type { PgDb } from "./pg-db.js";

// Named locks shared by every replica, on PostgreSQL session advisory locks: held by a session, they
// die with it, so a killed replica frees its locks as soon as the server sees its connection close.
// Advisory locks are per database, not per schema: names carry the schema, so two deployments in
// two schemas of one database (or two test schemas) never take each other's locks.

/** The PostgreSQL adapter of the job-leadership locks and the OAuth refresh lock. */
export class PgLocks implements LeaderLocks, RefreshLock {
  private schema: Promise<string> | undefined;

  constructor(private readonly db: PgDb) {}

  /** Takes `name` on a dedicated connection if no replica holds it; the lock lives as long as that connection. */
  async tryHold(name: string, onLost: (err: Error) => void): Promise<HeldLock | undefined> {
    return this.db.tryHoldLock(await this.qualified(name), onLost);
  }

  /** Runs `fn` holding the refresh lock of `connectionId`, waiting while another replica holds it. */
  async withLock<T>(connectionId: string, fn: () => Promise<T>): Promise<T> {
    return this.db.withSessionLock(await this.qualified(`oauth-refresh:${connectionId}`), () => fn());
  }

  private async qualified(name: string): Promise<string> {
    this.schema ??= this.db.query<{ s: string }>("SELECT current_schema() AS s").then(
      (r) => r.rows[0]?.s ?? "public",
      (err: unknown) => {
        this.schema = undefined; // not cached: the next call asks again
        throw err;
      },
    );
    return `slaude-connect:${await this.schema}:${name}`;
  }
}
