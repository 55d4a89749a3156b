import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Clock } from "../clock/clock.js";
import type { Service } from "../config/registry.js";
import type { Redactor } from "../hygiene/redact.js";
import type { Logger } from "../log/logger.js";
import { noMetrics, type Metrics } from "../metrics/metrics.js";
import type { Connection } from "../store/records.js";
import type { RenderedCredential } from "./credential-template.js";
import { PoolError } from "./errors.js";
import type { VendorHandle, VendorLauncher } from "./launcher.js";
import { SlotQueue } from "./slot-queue.js";
import { LATE, stopVendor, within } from "./stop.js";
import { noCallEvents, type CallEventSink } from "../events/event-bus.js";
import type { ChildStopReason } from "../events/lifecycle-event.js";
import { childStarted, childStopped, vendorTag, type VendorTag } from "../events/vendor-events.js";

/** Settings of the pool. */
export interface PoolOptions {
  /** Cap on live vendors (stdio children and remote sessions). */
  readonly maxChildren: number;
  /** A vendor with no successful call for this long (and none in progress) is stopped by the reaper. */
  readonly idleMs: number;
  /** How long a call waits for a slot when every vendor is leased. */
  readonly acquireTimeoutMs: number;
}

/** What one call leases: a connection's vendor, started with this exact credential version. */
export interface PoolLease {
  readonly connection: Connection;
  readonly service: Service;
  /** Which version of the credential the vendor must run with; a change forces a respawn. */
  readonly version: string;
  /** The credential as the vendor receives it; asked for only when a vendor starts (throws if incomplete). */
  secrets(): RenderedCredential;
  /** Hides this credential in anything the vendor sends (the started listeners use it). */
  readonly redactor: Redactor;
}

interface Entry {
  readonly connectionId: string;
  readonly tag: VendorTag;
  readonly secretVersion: string;
  readonly ready: Promise<VendorHandle>;
  handle: VendorHandle | undefined;
  leases: number;
  lastUsed: number;
  dead: boolean;
}

/**
 * Called with a freshly started vendor's client and the lease that started it, e.g. to refresh the
 * tool metadata cache; the vendor is handed to calls once it settles. Rejecting with a PoolError (a
 * vendor over the broker's limits) kills the vendor and fails the calls waiting for it with that error.
 */
export type VendorStartedListener = (client: Client, lease: PoolLease) => void | Promise<void>;

/** The longest a stop (graceful or kill) of one vendor may take before the pool stops waiting for it. */
export const STOP_DEADLINE_MS = 15_000;

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
 * when idle, evicted least-recently-used when the cap is reached, dropped when they crash. Calls
 * waiting for a slot are served in arrival order, and a child is never evicted while calls wait for it.
 */
export class VendorPool {
  private readonly entries = new Map<string, Entry>();
  private stopping = 0;
  private spawned = 0;
  private readonly queue: SlotQueue;
  private closed = false;
  private readonly startedListeners: VendorStartedListener[] = [];

  constructor(
    private readonly launcher: VendorLauncher,
    private readonly opts: PoolOptions,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly metrics: Pick<Metrics, "poolWaited"> = noMetrics,
    private readonly events: CallEventSink = noCallEvents,
  ) {
    this.queue = new SlotQueue(clock, (id) => this.isLive(id));
  }

  onVendorStarted(l: VendorStartedListener): void {
    this.startedListeners.push(l);
  }

  stats(): PoolStats {
    let leased = 0;
    for (const e of this.entries.values()) if (e.leases > 0) leased++;
    return { live: this.entries.size, leased, stopping: this.stopping, spawned: this.spawned, waiting: this.queue.size };
  }

  /** Connection ids with a live (or starting) vendor. */
  liveConnectionIds(): string[] {
    return [...this.entries.keys()];
  }

  /** The clients of vendors that are started and not going away (the periodic tool re-list reads them). */
  liveClients(): Client[] {
    return [...this.entries.values()].flatMap((e) => (e.handle && !e.dead ? [e.handle.client] : []));
  }

  /** Kills the vendor whose client is `client`, if it is still live (one whose re-read tool list went over the limits). */
  async dropClient(client: Client): Promise<void> {
    for (const e of this.entries.values()) if (e.handle?.client === client) await this.remove(e, "kill", "limit");
  }

  /** Whether a vendor is currently live for `connectionId`. */
  has(connectionId: string): boolean {
    return this.entries.has(connectionId);
  }

  /** The process group id of a connection's stdio child, if live. */
  pidOf(connectionId: string): number | undefined {
    return this.entries.get(connectionId)?.handle?.pid;
  }

  /** Runs `fn` with the vendor client of the lease's connection, starting it if needed; the vendor is neither reaped nor evicted until `fn` settles. */
  async withLease<T>(lease: PoolLease, fn: (client: Client, handle: VendorHandle) => Promise<T>): Promise<T> {
    const entry = await this.acquire(lease);
    try {
      const handle = await entry.ready;
      const r = await fn(handle.client, handle);
      // Only a call that worked counts as use: failing calls must not keep a broken vendor from the reaper.
      entry.lastUsed = this.clock.now();
      return r;
    } finally {
      entry.leases--;
      this.wake();
    }
  }

  private isLive(connectionId: string): boolean {
    const e = this.entries.get(connectionId);
    return e !== undefined && !e.dead;
  }

  /** Acquires a lease; a call that had to wait for a slot is reported to the metrics. */
  private async acquire(lease: PoolLease): Promise<Entry> {
    const wait: { since?: number } = {};
    try {
      const entry = await this.acquireSlot(lease, wait);
      if (wait.since !== undefined) this.metrics.poolWaited((performance.now() - wait.since) / 1000, "slot");
      return entry;
    } catch (err) {
      if (wait.since !== undefined) this.metrics.poolWaited((performance.now() - wait.since) / 1000, err instanceof PoolError && err.code === "pool_busy" ? "timeout" : "slot");
      throw err;
    }
  }

  private async acquireSlot(lease: PoolLease, wait: { since?: number }): Promise<Entry> {
    const id = lease.connection.id;
    const deadline = this.clock.now() + this.opts.acquireTimeoutMs;
    // A turn at a slot is held from the wake-up until this call spawns, joins, or queues again, so
    // no later arrival takes the slot meanwhile (not even during an eviction).
    let myTurn = false;
    const giveBack = () => {
      if (myTurn) this.queue.tookTurn();
      myTurn = false;
    };
    try {
      for (;;) {
        if (this.closed) throw new PoolError("shutting_down", "the broker is shutting down");
        const existing = this.entries.get(id);
        if (existing && !existing.dead && existing.secretVersion === lease.version) {
          // A turn that turned out not to be needed passes to the next waiting call.
          if (myTurn) (giveBack(), this.wake());
          return this.join(existing);
        }
        if (existing) {
          // Stale credential or a dead vendor: replace it.
          await this.remove(existing, "kill", "replaced");
          continue;
        }
        if (myTurn || !this.queue.busy) {
          if (this.entries.size + this.stopping < this.opts.maxChildren) return this.spawn(lease);
          const victim = this.lruIdle();
          if (victim) {
            this.log.debug("evicting idle vendor", { connectionId: victim.connectionId });
            await this.remove(victim, "close", "evicted");
            continue;
          }
        }
        wait.since ??= performance.now();
        if (this.clock.now() >= deadline) throw new PoolError("pool_busy", `all ${this.opts.maxChildren} vendor slots are busy with calls in progress; try again shortly`);
        const front: boolean = myTurn;
        giveBack();
        myTurn = (await this.queue.wait(id, deadline - this.clock.now(), front)) === "turn";
      }
    } finally {
      giveBack();
    }
  }

  /** Leases a live (or starting) vendor; a start that fails gives the lease back. */
  private async join(entry: Entry): Promise<Entry> {
    entry.leases++;
    try {
      await entry.ready;
    } catch (err) {
      entry.leases--;
      throw err;
    }
    return entry;
  }

  private spawn(lease: PoolLease): Entry {
    const { connection, service } = lease;
    let entry!: Entry;
    const ready = (async () => {
      const handle = await this.launcher.launch(connection, service, lease.secrets());
      entry.handle = handle;
      this.spawned++;
      this.events.emit(childStarted(entry.tag, this.clock.now()));
      handle.onClosed(() => {
        if (entry.dead) return;
        entry.dead = true;
        if (this.entries.get(entry.connectionId) === entry) this.entries.delete(entry.connectionId);
        this.log.warn("vendor went away", { connectionId: entry.connectionId, service: service.name });
        this.events.emit(childStopped(entry.tag, "crashed", this.clock.now()));
        this.wake();
      });
      try {
        await Promise.all(this.startedListeners.map((l) => l(handle.client, lease)));
      } catch (err) {
        if (!(err instanceof PoolError)) throw err;
        // Over the broker's limits (endless tools/list paging): this vendor gets no calls.
        if (!entry.dead) this.events.emit(childStopped(entry.tag, "limit", this.clock.now()));
        entry.dead = true;
        this.log.warn("vendor misbehaved; stopped", { connectionId: entry.connectionId, service: service.name, code: err.code });
        await this.stopHandle(entry.connectionId, handle, "kill");
        throw err;
      }
      return handle;
    })();
    entry = { connectionId: connection.id, tag: vendorTag(connection, service), secretVersion: lease.version, ready, handle: undefined, leases: 1, lastUsed: this.clock.now(), dead: false };
    this.entries.set(connection.id, entry);
    ready.then(
      () => this.wake(),
      () => {
        entry.dead = true;
        if (this.entries.get(connection.id) === entry) this.entries.delete(connection.id);
        this.wake();
      },
    );
    return entry;
  }

  /** The least recently used idle vendor that no waiting call is queued for. */
  private lruIdle(): Entry | undefined {
    let best: Entry | undefined;
    for (const e of this.entries.values()) {
      if (e.leases > 0 || !e.handle || this.queue.hasWaiterFor(e.connectionId)) continue;
      if (!best || e.lastUsed < best.lastUsed) best = e;
    }
    return best;
  }

  private async remove(entry: Entry, how: "close" | "kill", reason: ChildStopReason): Promise<void> {
    if (this.entries.get(entry.connectionId) === entry) this.entries.delete(entry.connectionId);
    // A vendor that already went away (crashed, or stopped for its limits) was reported then.
    const report = entry.dead ? () => {} : () => this.events.emit(childStopped(entry.tag, reason, this.clock.now()));
    entry.dead = true;
    this.stopping++;
    try {
      const handle = entry.handle ?? (await within(this.clock, entry.ready.catch(() => undefined), STOP_DEADLINE_MS));
      if (handle === LATE) {
        // Still starting after the deadline: kill it whenever it arrives, without holding the slot.
        this.log.warn("vendor still starting at its stop deadline", { connectionId: entry.connectionId });
        void entry.ready.then((h) => (report(), this.stopHandle(entry.connectionId, h, "kill")), () => {});
      } else if (handle) (report(), await this.stopHandle(entry.connectionId, handle, how));
    } finally {
      this.stopping--;
      this.wake();
    }
  }

  private stopHandle(connectionId: string, handle: VendorHandle, how: "close" | "kill"): Promise<void> {
    return stopVendor({ clock: this.clock, log: this.log, deadlineMs: STOP_DEADLINE_MS }, connectionId, handle, how);
  }

  /** Something changed (a lease ended, a vendor started or went): queued calls look again, in order. */
  private wake(): void {
    this.queue.wake();
  }

  /** Kills the vendor of `connectionId` (revoked, expired, hung); `reason` is what its child.stopped event says. */
  async drop(connectionId: string, how: "close" | "kill" = "kill", reason: ChildStopReason = "revoked"): Promise<void> {
    const e = this.entries.get(connectionId);
    if (e) await this.remove(e, how, reason);
  }

  /** Stops vendors idle for at least idleMs; returns how many. */
  async reapIdle(): Promise<number> {
    const now = this.clock.now();
    const idle = [...this.entries.values()].filter((e) => e.leases === 0 && e.handle && now - e.lastUsed >= this.opts.idleMs);
    await Promise.all(idle.map((e) => this.remove(e, "close", "idle")));
    return idle.length;
  }

  /** Stops every vendor; new calls are refused. */
  async shutdown(): Promise<void> {
    this.closed = true;
    this.queue.wakeAll();
    await Promise.all([...this.entries.values()].map((e) => this.remove(e, "close", "shutdown")));
  }
}
