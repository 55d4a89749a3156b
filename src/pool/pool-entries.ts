import type { VendorTag } from "../events/vendor-events.js";
import type { VendorHandle } from "./launcher.js";

// The pool's table of vendors and what each team holds of it: live (or starting) entries and
// entries still stopping, per team, so a team's cap counts a child until its process is gone.

/** One vendor of the pool, keyed by its connection. */
export interface Entry {
  readonly connectionId: string;
  /** The team of the connection: whose per-team cap the vendor counts against. */
  readonly teamId: string;
  /** What the vendor's lifecycle events name (src/events/vendor-events.ts). */
  readonly tag: VendorTag;
  readonly secretVersion: string;
  readonly ready: Promise<VendorHandle>;
  handle: VendorHandle | undefined;
  leases: number;
  lastUsed: number;
  dead: boolean;
}

/** The vendors by connection id, with per-team counts; bounded by the pool's cap (a team is a key only while it holds a vendor). */
export class PoolEntries {
  private readonly byConnection = new Map<string, Entry>();
  private readonly stoppingByTeam = new Map<string, number>();
  /** Vendors being stopped (their slots are not free yet). */
  stopping = 0;

  /** Live (or starting) vendors. */
  get size(): number {
    return this.byConnection.size;
  }

  /** The vendor of `connectionId`, if any. */
  get(connectionId: string): Entry | undefined {
    return this.byConnection.get(connectionId);
  }

  /** Whether `connectionId` has a vendor. */
  has(connectionId: string): boolean {
    return this.byConnection.has(connectionId);
  }

  /** Holds `entry` as its connection's vendor. */
  set(entry: Entry): void {
    this.byConnection.set(entry.connectionId, entry);
  }

  /** Removes `entry` if it is still the one held for its connection (a replacement is kept). */
  delete(entry: Entry): void {
    if (this.byConnection.get(entry.connectionId) === entry) this.byConnection.delete(entry.connectionId);
  }

  /** Every vendor held. */
  values(): IterableIterator<Entry> {
    return this.byConnection.values();
  }

  /** The connection ids of every vendor held. */
  keys(): IterableIterator<string> {
    return this.byConnection.keys();
  }

  /** `entry` starts stopping: its slot (and its team's) stays taken until `stopped`. */
  stopStarted(entry: Entry): void {
    this.stopping++;
    this.stoppingByTeam.set(entry.teamId, (this.stoppingByTeam.get(entry.teamId) ?? 0) + 1);
  }

  /** `entry`'s stop is over: its slot (and its team's) is free. */
  stopped(entry: Entry): void {
    this.stopping--;
    const n = (this.stoppingByTeam.get(entry.teamId) ?? 1) - 1;
    if (n > 0) this.stoppingByTeam.set(entry.teamId, n);
    else this.stoppingByTeam.delete(entry.teamId);
  }

  /** The vendor slots `teamId` holds: live, starting and stopping. */
  teamLoad(teamId: string): number {
    let n = this.stoppingByTeam.get(teamId) ?? 0;
    for (const e of this.byConnection.values()) if (e.teamId === teamId) n++;
    return n;
  }

  /** Teams holding at least `cap` slots right now. */
  teamsAtCap(cap: number): number {
    const load = new Map(this.stoppingByTeam);
    for (const e of this.byConnection.values()) load.set(e.teamId, (load.get(e.teamId) ?? 0) + 1);
    let n = 0;
    for (const l of load.values()) if (l >= cap) n++;
    return n;
  }

  /** The least recently used idle vendor (of `teamId` only, when given) that `keep` does not protect. */
  lruIdle(keep: (connectionId: string) => boolean, teamId?: string): Entry | undefined {
    let best: Entry | undefined;
    for (const e of this.byConnection.values()) {
      if (e.leases > 0 || !e.handle || (teamId !== undefined && e.teamId !== teamId) || keep(e.connectionId)) continue;
      if (!best || e.lastUsed < best.lastUsed) best = e;
    }
    return best;
  }
}
