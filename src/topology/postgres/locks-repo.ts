import pg from "pg";
import type { HeldLock, LeaderLocks } from "../../jobs/leadership.js";
import type { RefreshLock } from "../../login/oauth/refresh-lock.js";
import { KEY_PARAM } from "../../store/postgres/lock-keys.js";
import { mapPgError, type PgDb } from "../../store/postgres/pg-db.js";

// Named locks shared by every replica, on PostgreSQL session advisory locks: held by a session, they
// die with it, so a killed replica frees its locks as soon as the server sees its connection close.
// Advisory locks are per database, not per schema: names carry the schema, so two deployments in
// two schemas of one database (or two test schemas) never take each other's locks. Names become
// keys through the store's LockKeys (an HMAC under the key ring): another role cannot compute them.

/** How long a refresh waits for another replica's refresh of the same connection (one token request, 15 s at most). */
export const REFRESH_LOCK_WAIT_MS = 30_000;

/** Refresh locks held or awaited at once per process, each on its own connection (beyond the pool). */
const MAX_REFRESH_LOCKS = 8;

/** The PostgreSQL adapter of the job-leadership locks and the OAuth refresh lock. */
export class PgLocks implements LeaderLocks, RefreshLock {
  private schema: Promise<string> | undefined;
  private refreshing = 0;
  // Bounded by the refresher's in-flight map: one entry per connection being opened at this moment.
  private readonly queue: Array<() => void> = [];

  constructor(private readonly db: PgDb) {}

  /** Takes `name` on a dedicated connection if no replica holds it; the lock lives as long as that connection. */
  async tryHold(name: string, onLost: (err: Error) => void): Promise<HeldLock | undefined> {
    return this.db.tryHoldLock(await this.qualified(name), onLost);
  }

  /**
   * The role of a session holding the lock `name` when that role is not this one (someone else on the
   * server who read the key from pg_locks), else undefined: a replica of ours holding it is not news.
   */
  async foreignHolder(name: string): Promise<string | undefined> {
    const keys = this.db.lockKeys.keys(await this.qualified(name));
    const r = await this.db.query<{ role: string | null }>(
      `SELECT a.usename AS role FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND ((l.classid::int8 << 32) | l.objid::int8) = ANY($1::bigint[])
          AND a.usename IS DISTINCT FROM current_user
        LIMIT 1`,
      [keys],
    );
    const row = r.rows[0];
    return row ? (row.role ?? "(unknown)") : undefined;
  }

  /**
   * Runs `fn` holding the refresh lock of `connectionId`, waiting (at most REFRESH_LOCK_WAIT_MS, then
   * StoreError `busy`) while another replica holds it. The lock is on its own connection, not a pooled
   * one: `fn` reads and writes through the pool, and must never wait for a client its own lock holds.
   */
  async withLock<T>(connectionId: string, fn: () => Promise<T>): Promise<T> {
    const name = await this.qualified(`oauth-refresh:${connectionId}`);
    await this.slot();
    const client = new pg.Client({ ...this.db.clientConfig(), connectionTimeoutMillis: 10_000 });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.query(`SET lock_timeout = ${REFRESH_LOCK_WAIT_MS}`);
      for (const k of this.db.lockKeys.keys(name)) await client.query(`SELECT pg_advisory_lock(${KEY_PARAM})`, [k]);
      return await fn();
    } catch (err) {
      throw mapPgError(err);
    } finally {
      // Ending the session releases its advisory lock.
      await client.end().catch(() => {});
      this.release();
    }
  }

  private async slot(): Promise<void> {
    if (this.refreshing < MAX_REFRESH_LOCKS) {
      this.refreshing++;
      return;
    }
    await new Promise<void>((resolve) => this.queue.push(resolve));
  }

  private release(): void {
    const next = this.queue.shift();
    if (next)
      next(); // the slot passes straight to the next waiter
    else this.refreshing--;
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
