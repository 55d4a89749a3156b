import type { Client } from "@modelcontextprotocol/client";
import type { Clock } from "../clock/clock.js";
import { type CallEventSink, noCallEvents } from "../events/event-bus.js";
import type { ChildStopReason } from "../events/lifecycle-event.js";
import type { Logger } from "../log/logger.js";
import { type Metrics, noMetrics } from "../metrics/metrics.js";
import { PoolError } from "./errors.js";
import type { VendorHandle, VendorLauncher } from "./launcher.js";
import { type Entry, PoolEntries } from "./pool-entries.js";
import type { PoolLease, PoolOptions, PoolStats, VendorStartedListener } from "./pool-types.js";
import { SlotQueue } from "./slot-queue.js";
import { type EntryStopDeps, stopEntry } from "./stop.js";
import { type EntryStartDeps, startEntry } from "./vendor-start.js";

export type { PoolLease, PoolOptions, PoolStats, VendorStartedListener } from "./pool-types.js";
export { STOP_DEADLINE_MS } from "./stop.js";

/**
 * Vendors keyed by connection id: spawned lazily, leased per call (never reaped mid-call), stopped
 * when idle, evicted least-recently-used when the cap is reached, dropped when they crash. Calls
 * waiting for a slot are served in arrival order, and a child is never evicted while calls wait for it.
 * A team at its own cap makes room only by stopping one of its own idle vendors, or waits; its
 * waiting calls never hold up another team's (they are passed over until their team has room).
 */
export class VendorPool {
  private readonly entries = new PoolEntries();
  private spawned = 0;
  private readonly queue: SlotQueue;
  private closed = false;
  private readonly startedListeners: VendorStartedListener[] = [];
  /** What stopping an entry touches: the table, the stop events, the queue's wake-up. */
  private readonly stopping: EntryStopDeps;
  /** What starting a vendor touches besides: the launcher, the started listeners, the spawn count. */
  private readonly starting: EntryStartDeps;

  constructor(
    launcher: VendorLauncher,
    private readonly opts: PoolOptions,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly metrics: Pick<Metrics, "poolWaited" | "limitRefused"> = noMetrics,
    events: CallEventSink = noCallEvents,
  ) {
    this.queue = new SlotQueue(
      clock,
      (id) => this.isLive(id),
      (team) => this.teamBlocked(team),
    );
    this.stopping = { clock, log, entries: this.entries, events, wake: () => this.wake() };
    this.starting = {
      ...this.stopping,
      launcher,
      startedListeners: this.startedListeners,
      onSpawned: () => this.spawned++,
    };
  }

  /** One team's cap on vendors. */
  private get perTeam(): number {
    return Math.min(this.opts.maxChildrenPerTeam ?? this.opts.maxChildren, this.opts.maxChildren);
  }

  /** A team at its cap with no idle vendor of its own to stop: its calls wait, and others pass them. */
  private teamBlocked(teamId: string): boolean {
    return (
      this.entries.teamLoad(teamId) >= this.perTeam &&
      !this.entries.lruIdle((id) => this.queue.hasWaiterFor(id), teamId)
    );
  }

  /** Teams holding their whole per-team cap of vendors now (the tenants-at-limit gauge). */
  teamsAtCap(): number {
    return this.entries.teamsAtCap(this.perTeam);
  }

  onVendorStarted(l: VendorStartedListener): void {
    this.startedListeners.push(l);
  }

  stats(): PoolStats {
    let leased = 0;
    for (const e of this.entries.values()) if (e.leases > 0) leased++;
    return {
      live: this.entries.size,
      leased,
      stopping: this.entries.stopping,
      spawned: this.spawned,
      waiting: this.queue.size,
    };
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
      if (wait.since !== undefined)
        this.metrics.poolWaited(
          (performance.now() - wait.since) / 1000,
          err instanceof PoolError && err.code === "pool_busy" ? "timeout" : "slot",
        );
      throw err;
    }
  }

  private async acquireSlot(lease: PoolLease, wait: { since?: number }): Promise<Entry> {
    const id = lease.connection.id;
    const team = lease.connection.teamId;
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
          if (myTurn) {
            giveBack();
            this.wake();
          }
          return this.join(existing);
        }
        if (existing) {
          // Stale credential or a dead vendor: replace it.
          await this.remove(existing, "kill", "replaced");
          continue;
        }
        const teamFull = this.entries.teamLoad(team) >= this.perTeam;
        if (myTurn || !this.queue.busy) {
          if (!teamFull && this.entries.size + this.entries.stopping < this.opts.maxChildren)
            return startEntry(this.starting, lease);
          // A team at its own cap makes room among its own idle vendors only, never another team's.
          const victim = this.lruIdle(teamFull ? team : undefined);
          if (victim) {
            this.log.debug("evicting idle vendor", { connectionId: victim.connectionId });
            await this.remove(victim, "close", "evicted");
            continue;
          }
        }
        wait.since ??= performance.now();
        if (this.clock.now() >= deadline) {
          if (teamFull) {
            this.metrics.limitRefused("children");
            throw new PoolError(
              "pool_busy",
              `all ${this.perTeam} vendor slots of this team are busy with calls in progress; try again shortly`,
            );
          }
          throw new PoolError(
            "pool_busy",
            `all ${this.opts.maxChildren} vendor slots are busy with calls in progress; try again shortly`,
          );
        }
        const front: boolean = myTurn;
        giveBack();
        myTurn = (await this.queue.wait(id, team, deadline - this.clock.now(), front)) === "turn";
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

  /** The least recently used idle vendor (of `teamId` only, when given) that no waiting call is queued for. */
  private lruIdle(teamId?: string): Entry | undefined {
    return this.entries.lruIdle((id) => this.queue.hasWaiterFor(id), teamId);
  }

  private remove(entry: Entry, how: "close" | "kill", reason: ChildStopReason): Promise<void> {
    return stopEntry(this.stopping, entry, how, reason);
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
    const idle = [...this.entries.values()].filter(
      (e) => e.leases === 0 && e.handle && now - e.lastUsed >= this.opts.idleMs,
    );
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
