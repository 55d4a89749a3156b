import pg from "pg";
import { asError } from "../../domain/errors.js";
import { StoreError } from "../errors.js";
import { KEY_PARAM, LockKeys } from "./lock-keys.js";
import { LockSession, type SessionLock } from "./lock-session.js";
import { mapPgError } from "./pg-common.js";
import { isStalePlan, PreparedNames } from "./prepared.js";
import { SharedSend } from "./shared-send.js";

// The PostgreSQL handle every repository shares: one pool, transactions on one pooled client,
// advisory locks, and a dedicated (unpooled) connection for LISTEN. Replicas share the database, so
// anything that must happen once across them goes through a row condition or an advisory lock here.

/** Something SQL can be sent to: the pool (autocommit) or the client of an open transaction. */
export interface Sql {
  query<R extends pg.QueryResultRow = Record<string, unknown>>(
    text: string,
    values?: readonly unknown[],
  ): Promise<pg.QueryResult<R>>;
}

/** Options of a PostgreSQL store connection. */
export interface PgDbOptions {
  /** postgres://user:password@host:port/db?sslmode=…: TLS follows the URL's sslmode (pg-connection-string). */
  readonly url: string;
  /** How long a statement waits for a row or advisory lock before failing as StoreError `busy`. */
  readonly lockWaitMs?: number;
  /** Pool size per process (each replica has its own pool). */
  readonly maxConnections?: number;
  /** How lock names become advisory lock keys: from the key ring in a deployment (default: the guessable development keys). */
  readonly lockKeys?: LockKeys;
}

const INT8_OID = 20;
/** How long opening a pooled connection may take before the statement fails as `unavailable`. */
const CONNECT_TIMEOUT_MS = 10_000;

/** bigint columns (times in ms, counts, seq) come back as numbers; a value past 2^53 is a bug, not data to round. */
function parseInt8(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n))
    throw new StoreError("open_failed", `bigint value ${text} is outside JavaScript's safe integer range`);
  return n;
}

const types = {
  getTypeParser(oid: number, format?: string): (value: string) => unknown {
    if (oid === INT8_OID && format !== "binary") return parseInt8;
    return pg.types.getTypeParser(oid, format as "text");
  },
} as unknown as pg.CustomTypesConfig;

export { LOCK_KEY_SQL, mapPgError } from "./pg-common.js";

/** The shared pool of one process; `ready` gates every query until migrations have run. */
export class PgDb implements Sql {
  readonly pool: pg.Pool;
  /** Statements sent through `query` and `tx` (BEGIN/COMMIT not included) and transactions committed: /metrics. */
  readonly counts = { statements: 0, transactions: 0 };
  /** Statement texts sent as named (prepared) statements: parsed and planned once per connection. */
  readonly prepared = new PreparedNames();
  private gate: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** Lock names to advisory lock keys (lock-keys.ts): every advisory lock of the store goes through them. */
  readonly lockKeys: LockKeys;
  /** The connection holding this process's long-lived locks (tryHoldLock): closing the store ends it, freeing them. */
  private readonly locks: LockSession;
  /** Autocommit statements sent together share one client and one write (shared-send.ts). */
  private readonly shared = new SharedSend(() => this.checkout());

  constructor(private readonly opts: PgDbOptions) {
    this.lockKeys = opts.lockKeys ?? LockKeys.unkeyed();
    this.locks = new LockSession(() => this.clientConfig(), this.lockKeys);
    // A server that does not answer must not hold a request for the kernel's connect timeout: it is `unavailable`.
    this.pool = new pg.Pool({
      ...this.clientConfig(),
      max: opts.maxConnections ?? 10,
      // A query is written as soon as it is queued, not after the previous answer: tx() sends BEGIN
      // with its first statement (one round trip fewer per transaction; the server runs them in order).
      pipeline: true,
      idleTimeoutMillis: 30_000,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    });
    // An idle client losing its connection (a restarted server) must not crash the process; the pool drops it.
    this.pool.on("error", () => {});
  }

  /**
   * A client of the pool for the caller's own statements, with an 'error' listener for as long as it
   * is checked out: the pool listens only to idle clients, and a socket error on a client with no
   * listener (a restarted server cutting an open transaction) is an uncaught exception that ends the
   * process. The error (if any) is kept so `release` drops that connection instead of reusing it.
   */
  private async checkout(): Promise<{
    client: pg.PoolClient;
    failed: () => Error | undefined;
    release: (err?: Error) => void;
  }> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw mapPgError(err);
    }
    let failed: Error | undefined;
    const onError = (err: Error): void => {
      failed ??= err;
    };
    client.on("error", onError);
    return {
      client,
      failed: () => failed,
      release: (err) => {
        client.removeListener("error", onError);
        client.release(err ?? failed);
      },
    };
  }

  /** The config of one connection: the URL, bigint parsing, the lock wait, a name in pg_stat_activity. */
  clientConfig(): pg.ClientConfig {
    return {
      connectionString: this.opts.url,
      types,
      application_name: "slaude-connect",
      ...(this.opts.lockWaitMs !== undefined ? { lock_timeout: this.opts.lockWaitMs } : {}),
    };
  }

  /** Every query waits for `p` first (the migrations); a rejected `p` fails every query: closed, not half-open. */
  setGate(p: Promise<unknown>): void {
    this.gate = p;
    p.catch(() => {});
  }

  private async usable(): Promise<void> {
    if (this.closed) throw new StoreError("open_failed", "database is not open (the PostgreSQL store was closed)");
    await this.gate;
  }

  async query<R extends pg.QueryResultRow = Record<string, unknown>>(
    text: string,
    values: readonly unknown[] = [],
  ): Promise<pg.QueryResult<R>> {
    await this.usable();
    this.counts.statements++;
    try {
      return await this.shared.send<R>(this.prepared.config(text, values));
    } catch (err) {
      if (!isStalePlan(err)) throw mapPgError(err);
      // A newer replica's migration changed a table under a prepared `SELECT *`: send it unnamed from now on.
      this.prepared.retire(text);
      try {
        return await this.pool.query<R>(text, values as unknown[]);
      } catch (e) {
        throw mapPgError(e);
      }
    }
  }

  /** Runs `fn` in one READ COMMITTED transaction on one client; rolls back on any error and rethrows it. */
  async tx<T>(fn: (q: Sql) => Promise<T>): Promise<T> {
    await this.usable();
    const { client, release } = await this.checkout();
    let broken: Error | undefined;
    try {
      // Not awaited: BEGIN goes out with the first statement, which the server runs after it. BEGIN
      // fails only with its connection (failing the statements behind it too); awaited before COMMIT.
      const begun = client.query("BEGIN");
      begun.catch(() => {});
      const counted: Sql = {
        query: <R extends pg.QueryResultRow>(text: string, values?: readonly unknown[]) => {
          this.counts.statements++;
          // Inside a transaction a stale plan aborts it: the text is retired, the caller's retry runs it unnamed.
          return client.query<R>(this.prepared.config(text, values ?? [])).catch((err: unknown) => {
            if (isStalePlan(err)) this.prepared.retire(text);
            throw err;
          });
        },
      };
      const out = await fn(counted);
      await begun;
      await client.query("COMMIT");
      this.counts.transactions++;
      return out;
    } catch (err) {
      try {
        await client.query("ROLLBACK");
      } catch (e) {
        broken = asError(e); // the connection is unusable: the pool must not hand it out again
      }
      throw mapPgError(err);
    } finally {
      release(broken);
    }
  }

  /**
   * Runs `fn` holding the session-level advisory lock `name` (keyed like every lock, see lock-keys.ts)
   * on a dedicated client (waits for it). Released even when `fn` throws.
   */
  async withSessionLock<T>(name: string, fn: (q: Sql) => Promise<T>): Promise<T> {
    if (this.closed) throw new StoreError("open_failed", "database is not open (the PostgreSQL store was closed)");
    const keys = this.lockKeys.keys(name);
    const { client, release } = await this.checkout();
    let broken: Error | undefined;
    try {
      await client.query("SET lock_timeout = 0");
      for (const k of keys) await client.query(`SELECT pg_advisory_lock(${KEY_PARAM})`, [k]);
      try {
        return await fn(client);
      } finally {
        for (const k of [...keys].reverse())
          await client.query(`SELECT pg_advisory_unlock(${KEY_PARAM})`, [k]).catch((e: Error) => (broken = e));
        await client.query("RESET lock_timeout").catch((e: Error) => (broken = e));
      }
    } catch (err) {
      throw mapPgError(err);
    } finally {
      release(broken);
    }
  }

  /**
   * Tries the session advisory lock `name` on this process's lock session (one connection for all
   * such locks); the holder keeps it until `release()` or until that connection dies, when `onLost`
   * runs once (the lock is free for others from then on).
   */
  async tryHoldLock(name: string, onLost: (err: Error) => void = () => {}): Promise<SessionLock | undefined> {
    await this.usable();
    return this.locks.tryHold(name, onLost);
  }

  /** Whether some session holds the advisory lock `name` (asked on a pooled connection: one statement, nothing kept). */
  async lockHeld(name: string): Promise<boolean> {
    for (const k of this.lockKeys.keys(name)) {
      const r = await this.query<{ held: boolean }>(
        `SELECT CASE WHEN pg_try_advisory_lock(${KEY_PARAM}) THEN NOT pg_advisory_unlock(${KEY_PARAM}) ELSE true END AS held`,
        [k],
      );
      if (r.rows[0]?.held === true) return true;
    }
    return false;
  }

  /** Sends a NOTIFY on `channel` (delivered when the surrounding transaction, if any, commits). */
  async notify(channel: string, payload: string, q: Sql = this): Promise<void> {
    await q.query("SELECT pg_notify($1, $2)", [channel, payload]);
  }

  /**
   * LISTENs on `channel` over its own connection (a pooled one would be handed to others). `onLost`
   * runs once when that connection fails or ends: notifications may have been missed, so re-read the database.
   */
  async listen(
    channel: string,
    onMessage: (payload: string) => void,
    onLost: (err: Error) => void = () => {},
  ): Promise<{ close(): Promise<void> }> {
    await this.usable();
    // Keepalive: a silently dead peer (a failed-over server, a cut network) must surface as a loss.
    const client = new pg.Client({ ...this.clientConfig(), keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
    let closing = false;
    let lost = false;
    const loseOnce = (err: Error): void => {
      if (closing || lost) return;
      lost = true;
      onLost(err);
    };
    client.on("notification", (n) => {
      if (n.channel === channel) onMessage(n.payload ?? "");
    });
    client.on("error", loseOnce);
    // A connection ended by the server (pg_terminate_backend, a restart) may end without an error event.
    client.on("end", () => loseOnce(new Error("LISTEN connection ended")));
    try {
      await client.connect();
      await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (err) {
      closing = true;
      await client.end().catch(() => {});
      throw mapPgError(err);
    }
    return {
      close: async () => {
        closing = true;
        await client.end();
      },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.locks.close();
    await this.pool.end();
  }
}
