import pg from "pg";
import { KEY_PARAM, LockKeys } from "./lock-keys.js";
import { mapPgError } from "./pg-common.js";

// Every lock this process holds "for as long as it runs" (job leadership, the login liveness mark)
// on one dedicated connection: session advisory locks die with their session, so a killed replica
// frees all of them as soon as the server sees that connection close. One connection per replica,
// opened once, instead of one per lock and one per try: a replica that leads nothing still asks
// every job's lock each tick.

/** A lock held on the session; `release()` gives it back, `onLost` (given to tryHold) runs if the session dies first. */
export interface SessionLock {
  release(): Promise<void>;
}

/** Locks one process can hold at once: the job names and its own liveness mark, a fixed set in the code. */
const MAX_LOCKS = 64;

interface Hold {
  readonly onLost: (err: Error) => void;
  granted: boolean;
}

/** One unpooled connection holding named session advisory locks, taken without waiting. */
export class LockSession {
  private client: Promise<pg.Client> | undefined;
  /** The connected session `client` resolved to, while it lives. */
  private current: pg.Client | undefined;
  // Bounded by MAX_LOCKS: a name is here while it is held or being tried.
  private readonly holds = new Map<string, Hold>();
  private closed = false;

  constructor(
    private readonly config: () => pg.ClientConfig,
    /** How a name becomes its advisory lock keys (secret-derived: another role cannot name them). */
    private readonly keys: LockKeys = LockKeys.unkeyed(),
  ) {}

  /**
   * Takes `name` if no session holds it, else undefined. A name this process already holds or is
   * trying counts as taken (session locks are re-entrant in PostgreSQL; ours are not).
   */
  async tryHold(name: string, onLost: (err: Error) => void): Promise<SessionLock | undefined> {
    if (this.closed || this.holds.has(name)) return undefined;
    if (this.holds.size >= MAX_LOCKS) throw new Error(`more than ${MAX_LOCKS} session locks held at once`);
    const hold: Hold = { onLost, granted: false };
    this.holds.set(name, hold);
    let got = false;
    try {
      const client = await this.connection();
      got = await this.tryAll(client, this.keys.keys(name));
    } catch (err) {
      throw mapPgError(err);
    } finally {
      // The session may have died while we asked: then `holds` was cleared and this hold is not ours to keep.
      if (!got || this.holds.get(name) !== hold) {
        if (this.holds.get(name) === hold) this.holds.delete(name);
        got = false;
      }
    }
    if (!got) return undefined;
    hold.granted = true;
    return { release: () => this.release(name, hold) };
  }

  /** Ends the session: every lock it holds is freed at once, and each holder told (the store closing under it). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const held = [...this.holds.values()].filter((h) => h.granted);
    this.holds.clear();
    const client = this.client;
    this.client = undefined;
    this.current = undefined;
    await client?.then((c) => c.end()).catch(() => {});
    for (const h of held) h.onLost(new Error("the store was closed"));
  }

  private async release(name: string, hold: Hold): Promise<void> {
    if (this.holds.get(name) !== hold) return; // released already, or lost with the session
    this.holds.delete(name);
    const client = await this.client?.catch(() => undefined);
    // A failed unlock means the session is gone, and the lock with it.
    if (client) await unlockAll(client, this.keys.keys(name)).catch(() => {});
  }

  /** Takes every key (ascending) or none: on the first one held elsewhere, gives back those taken. */
  private async tryAll(client: pg.Client, keys: readonly string[]): Promise<boolean> {
    const taken: string[] = [];
    for (const k of keys) {
      const ok =
        (await client.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(${KEY_PARAM}) AS ok`, [k])).rows[0]?.ok ===
        true;
      if (!ok) {
        await unlockAll(client, taken);
        return false;
      }
      taken.push(k);
    }
    return taken.length > 0;
  }

  private connection(): Promise<pg.Client> {
    this.client ??= this.open().catch((err: unknown) => {
      this.client = undefined; // not cached: the next try connects again
      throw err;
    });
    return this.client;
  }

  private async open(): Promise<pg.Client> {
    // A server that does not answer must not hold a job's tick for the kernel's connect timeout.
    const client = new pg.Client({ ...this.config(), keepAlive: true, connectionTimeoutMillis: 10_000 });
    let dead = false;
    const lost = (err: Error): void => {
      if (dead) return;
      dead = true;
      // The next try connects afresh (a session that failed before it opened is dropped by connection()).
      if (this.current === client) {
        this.current = undefined;
        this.client = undefined;
      }
      const held = [...this.holds.values()].filter((h) => h.granted);
      for (const [name, h] of this.holds) if (h.granted) this.holds.delete(name);
      for (const h of held) h.onLost(err);
    };
    client.on("error", lost);
    client.on("end", () => lost(new Error("the locks' database connection ended")));
    try {
      await client.connect();
      // A holder whose machine vanished (no FIN) must not keep its locks for the kernel's 2-hour keepalive:
      // the server probes this idle session and ends it (freeing the locks) within about 25 s.
      await client.query("SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3");
    } catch (err) {
      dead = true;
      await client.end().catch(() => {});
      throw err;
    }
    this.current = client;
    return client;
  }
}

/** Gives back session advisory locks `keys`, last taken first. */
async function unlockAll(client: pg.Client, keys: readonly string[]): Promise<void> {
  for (const k of [...keys].reverse()) await client.query(`SELECT pg_advisory_unlock(${KEY_PARAM})`, [k]);
}
