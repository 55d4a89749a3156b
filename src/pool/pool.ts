import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Clock } from "../clock/clock.js";
import type { Service } from "../config/registry.js";
import type { Logger } from "../log/logger.js";
import { noMetrics, type Metrics } from "../metrics/metrics.js";
import type { Connection } from "../store/records.js";
import type { Credential } from "../vault/credential.js";
import { PoolError } from "./errors.js";
import type { VendorHandle, VendorLauncher } from "./launcher.js";

/** Settings of the pool. */
export interface PoolOptions {
  /** Cap on live vendors (stdio children and remote sessions). */
  readonly maxChildren: number;
  /** A vendor idle this long is stopped by the reaper. */
  readonly idleMs: number;
  /** How long a call waits for a slot when every vendor is leased. */
  readonly acquireTimeoutMs: number;
}

interface Entry {
  readonly connectionId: string;
  /** Which version of the credential this vendor was started with; a change forces a respawn. */
  readonly secretVersion: string;
  readonly ready: Promise<VendorHandle>;
  handle: VendorHandle | undefined;
  leases: number;
  lastUsed: number;
  dead: boolean;
}

/**
 * Called with a freshly started vendor's client and the connection it serves, e.g. to refresh the
 * tool metadata cache; the vendor is handed to calls once it settles. Rejecting with a PoolError (a
 * vendor over the broker's limits) kills the vendor and fails the calls waiting for it with that error.
 */
export type VendorStartedListener = (service: Service, client: Client, connection: Connection) => void | Promise<void>;

/** The longest a stop (graceful or kill) of one vendor may take before the pool stops waiting for it. */
export const STOP_DEADLINE_MS = 15_000;

const LATE = Symbol("late");

/** `p`, or LATE if it has not settled within `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<T | typeof LATE> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof LATE>((r) => (timer = setTimeout(() => r(LATE), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** A snapshot of the pool, for metrics and tests. */
export interface PoolStats {
  readonly live: number;
  readonly leased: number;
  readonly stopping: number;
  readonly spawned: number;
  /** Calls waiting for a free slot right now. */
  readonly waiting: number;
}

/**
 * Vendors keyed by connection id: spawned lazily, leased per call (never reaped mid-call), stopped
 * when idle, evicted least-recently-used when the cap is reached, dropped when they crash.
 */
export class VendorPool {
  private readonly entries = new Map<string, Entry>();
  private stopping = 0;
  private spawned = 0;
  private waiters: (() => void)[] = [];
  private closed = false;
  private readonly startedListeners: VendorStartedListener[] = [];

  constructor(
    private readonly launcher: VendorLauncher,
    private readonly opts: PoolOptions,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly metrics: Pick<Metrics, "poolWaited"> = noMetrics,
  ) {}

  onVendorStarted(l: VendorStartedListener): void {
    this.startedListeners.push(l);
  }

  stats(): PoolStats {
    let leased = 0;
    for (const e of this.entries.values()) if (e.leases > 0) leased++;
    return { live: this.entries.size, leased, stopping: this.stopping, spawned: this.spawned, waiting: this.waiters.length };
  }

  /** Connection ids with a live (or starting) vendor. */
  liveConnectionIds(): string[] {
    return [...this.entries.keys()];
  }

  /** Whether a vendor is currently live for `connectionId`. */
  has(connectionId: string): boolean {
    return this.entries.has(connectionId);
  }

  /** The process group id of a connection's stdio child, if live. */
  pidOf(connectionId: string): number | undefined {
    return this.entries.get(connectionId)?.handle?.pid;
  }

  /**
   * Runs `fn` with the vendor client of `connection`, starting it if needed. The lease keeps the
   * vendor from being reaped or evicted until `fn` settles.
   */
  async withLease<T>(
    connection: Connection,
    service: Service,
    secretVersion: string,
    credential: () => Credential,
    fn: (client: Client, handle: VendorHandle) => Promise<T>,
  ): Promise<T> {
    const entry = await this.acquire(connection, service, secretVersion, credential);
    try {
      const handle = await entry.ready;
      return await fn(handle.client, handle);
    } finally {
      entry.leases--;
      entry.lastUsed = this.clock.now();
      this.wake();
    }
  }

  /** Acquires a lease; a call that had to wait for a slot is reported to the metrics. */
  private async acquire(connection: Connection, service: Service, secretVersion: string, credential: () => Credential): Promise<Entry> {
    const wait: { since?: number } = {};
    try {
      const entry = await this.acquireSlot(connection, service, secretVersion, credential, wait);
      if (wait.since !== undefined) this.metrics.poolWaited((Date.now() - wait.since) / 1000, "slot");
      return entry;
    } catch (err) {
      if (wait.since !== undefined) this.metrics.poolWaited((Date.now() - wait.since) / 1000, err instanceof PoolError && err.code === "pool_busy" ? "timeout" : "slot");
      throw err;
    }
  }

  private async acquireSlot(connection: Connection, service: Service, secretVersion: string, credential: () => Credential, wait: { since?: number }): Promise<Entry> {
    const deadline = Date.now() + this.opts.acquireTimeoutMs;
    for (;;) {
      if (this.closed) throw new PoolError("shutting_down", "the broker is shutting down");
      const existing = this.entries.get(connection.id);
      if (existing && !existing.dead && existing.secretVersion === secretVersion) {
        existing.leases++;
        existing.lastUsed = this.clock.now();
        try {
          await existing.ready;
        } catch (err) {
          existing.leases--;
          throw err;
        }
        return existing;
      }
      if (existing) {
        // Stale credential or a dead vendor: replace it.
        await this.remove(existing, "kill");
        continue;
      }
      if (this.entries.size + this.stopping < this.opts.maxChildren) return this.spawn(connection, service, secretVersion, credential);
      const victim = this.lruIdle();
      if (victim) {
        this.log.debug("evicting idle vendor", { connectionId: victim.connectionId });
        await this.remove(victim, "close");
        continue;
      }
      wait.since ??= Date.now();
      await this.waitForSlot(deadline);
    }
  }

  private spawn(connection: Connection, service: Service, secretVersion: string, credential: () => Credential): Entry {
    let entry!: Entry;
    const ready = (async () => {
      const handle = await this.launcher.launch(connection, service, credential());
      entry.handle = handle;
      this.spawned++;
      handle.onClosed(() => {
        if (entry.dead) return;
        entry.dead = true;
        if (this.entries.get(entry.connectionId) === entry) this.entries.delete(entry.connectionId);
        this.log.warn("vendor went away", { connectionId: entry.connectionId, service: service.name });
        this.wake();
      });
      try {
        await Promise.all(this.startedListeners.map((l) => l(service, handle.client, connection)));
      } catch (err) {
        if (!(err instanceof PoolError)) throw err;
        // Over the broker's limits (endless tools/list paging): this vendor gets no calls.
        entry.dead = true;
        this.log.warn("vendor misbehaved; stopped", { connectionId: entry.connectionId, service: service.name, code: err.code });
        await this.stopHandle(entry.connectionId, handle, "kill");
        throw err;
      }
      return handle;
    })();
    entry = { connectionId: connection.id, secretVersion, ready, handle: undefined, leases: 1, lastUsed: this.clock.now(), dead: false };
    this.entries.set(connection.id, entry);
    ready.catch(() => {
      entry.dead = true;
      if (this.entries.get(connection.id) === entry) this.entries.delete(connection.id);
      this.wake();
    });
    return entry;
  }

  private lruIdle(): Entry | undefined {
    let best: Entry | undefined;
    for (const e of this.entries.values()) if (e.leases === 0 && e.handle && (!best || e.lastUsed < best.lastUsed)) best = e;
    return best;
  }

  private async remove(entry: Entry, how: "close" | "kill"): Promise<void> {
    if (this.entries.get(entry.connectionId) === entry) this.entries.delete(entry.connectionId);
    entry.dead = true;
    this.stopping++;
    try {
      const handle = entry.handle ?? (await within(entry.ready.catch(() => undefined), STOP_DEADLINE_MS));
      if (handle === LATE) {
        // Still starting after the deadline: kill it whenever it arrives, without holding the slot.
        this.log.warn("vendor still starting at its stop deadline", { connectionId: entry.connectionId });
        void entry.ready.then((h) => this.stopHandle(entry.connectionId, h, "kill"), () => {});
      } else if (handle) await this.stopHandle(entry.connectionId, handle, how);
    } finally {
      this.stopping--;
      this.wake();
    }
  }

  /** Stops one vendor within STOP_DEADLINE_MS (a graceful stop that overruns is escalated to a kill); never throws. */
  private async stopHandle(connectionId: string, handle: VendorHandle, how: "close" | "kill"): Promise<void> {
    const attempt = (h: "close" | "kill") =>
      within(h === "kill" ? handle.kill() : handle.close(), STOP_DEADLINE_MS).catch((err: unknown) => {
        this.log.warn("vendor stop failed", { connectionId, error: (err as Error).message });
        return undefined;
      });
    if ((await attempt(how)) !== LATE) return;
    this.log.warn("vendor stop overran its deadline", { connectionId, how });
    if (how === "close" && (await attempt("kill")) !== LATE) return;
    this.log.error("vendor did not stop; its slot is released anyway", { connectionId });
  }

  private waitForSlot(deadline: number): Promise<void> {
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      return Promise.reject(
        new PoolError("pool_busy", `all ${this.opts.maxChildren} vendor slots are busy with calls in progress; try again shortly`),
      );
    }
    return new Promise((resolve) => {
      const timer = setTimeout(done, remaining);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.push(done);
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Kills the vendor of `connectionId` (revoked, expired, hung). */
  async drop(connectionId: string, how: "close" | "kill" = "kill"): Promise<void> {
    const e = this.entries.get(connectionId);
    if (e) await this.remove(e, how);
  }

  /** Stops vendors idle for at least idleMs; returns how many. */
  async reapIdle(): Promise<number> {
    const now = this.clock.now();
    const idle = [...this.entries.values()].filter((e) => e.leases === 0 && e.handle && now - e.lastUsed >= this.opts.idleMs);
    await Promise.all(idle.map((e) => this.remove(e, "close")));
    return idle.length;
  }

  /** Stops every vendor; new calls are refused. */
  async shutdown(): Promise<void> {
    this.closed = true;
    this.wake();
    await Promise.all([...this.entries.values()].map((e) => this.remove(e, "close")));
  }
}
