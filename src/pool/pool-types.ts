import type { Client } from "@modelcontextprotocol/client";
import type { Service } from "../config/registry.js";
import type { Redactor } from "../hygiene/redact.js";
import type { Connection } from "../store/records.js";
import type { RenderedCredential } from "./credential-template.js";

// The pool's public shapes: its settings, what a call leases, the started-vendor hook, its stats.

/** Settings of the pool. */
export interface PoolOptions {
  /** Cap on live vendors (stdio children and remote sessions). */
  readonly maxChildren: number;
  /** A vendor with no successful call for this long (and none in progress) is stopped by the reaper. */
  readonly idleMs: number;
  /** How long a call waits for a slot when every vendor is leased. */
  readonly acquireTimeoutMs: number;
  /** Cap on one team's live vendors (SLAUDE_POOL_MAX_CHILDREN_PER_TEAM); unset: the whole cap. */
  readonly maxChildrenPerTeam?: number;
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

/**
 * Called with a freshly started vendor's client and the lease that started it, e.g. to refresh the
 * tool metadata cache; the vendor is handed to calls once it settles. Rejecting with a PoolError (a
 * vendor over the broker's limits) kills the vendor and fails the calls waiting for it with that error.
 */
export type VendorStartedListener = (client: Client, lease: PoolLease) => void | Promise<void>;

/** A snapshot of the pool, for metrics and tests. */
export interface PoolStats {
  readonly live: number;
  readonly leased: number;
  readonly stopping: number;
  readonly spawned: number;
  /** Calls waiting for a free slot right now. */
  readonly waiting: number;
}
