import type { Clock } from "../clock/clock.js";
import type { ClusterSignals } from "../cluster/signals.js";
import type { LeaderLocks } from "../jobs/leadership.js";
import type { RateBuckets } from "../limits/call-rate.js";
import type { Logger } from "../log/logger.js";
import type { RefreshLock } from "../login/oauth/refresh-lock.js";
import type { LoginHolders } from "../login/replica/holders.js";
import type { SessionRecords } from "../server/session-records.js";
import type { PgDb } from "../store/postgres/pg-db.js";
import type { TurnLimits } from "../turns/turn-rules.js";
import type { TurnStore } from "../turns/turn-store.js";
import type { KeyRing } from "../vault/keyring.js";

// The deployment topology: everything that differs between one process (SQLite) and replicas
// sharing one PostgreSQL. The store factory opens the database and returns the matching adapter
// set beside the Store; nothing else asks which database is open.

/** What the signals adapter needs from the root. */
export interface SignalDeps {
  readonly log: Logger;
  readonly clock: Clock;
  /** The key ring: replicas seal every signal under it (cluster/signal-seal.ts). */
  readonly keys: () => KeyRing;
}

/** The replica-only parts over the shared database (undefined with one process). */
export interface ReplicaParts {
  /** The call-rate buckets every replica shares (one process keeps them in memory). */
  readonly rateBuckets: RateBuckets;
  /** The shared database, for the event relay between replicas (src/events/relay.ts). */
  readonly db: PgDb;
}

/** One deployment's adapter set for what one process and replicas do differently. */
export interface Topology {
  readonly kind: "single-process" | "replicas";
  /** Which process leads each periodic job. */
  readonly leaderLocks: LeaderLocks;
  /** One OAuth refresh per connection at a time (installations and connections). */
  readonly refreshLock: RefreshLock;
  /** Which process holds each login flow, and whether it still runs. */
  readonly loginHolders: LoginHolders;
  /**
   * Whether start-up may expire the calls an earlier run left pending: true only when no other
   * process can be running them (one process); a replica's peers may be.
   */
  readonly expireAbandonedAtStart: boolean;
  /** Set only with replicas. */
  readonly replicas?: ReplicaParts;
  /** Signals between processes: decisions, connection ends, membership, cancellations. */
  signals(deps: SignalDeps): ClusterSignals;
  /** The turns of every thread under `limits`. */
  turns(limits: Partial<TurnLimits>): TurnStore;
  /** MCP session records, at most `maxSessions` where this process keeps them. */
  sessionRecords(maxSessions: number): SessionRecords;
}
