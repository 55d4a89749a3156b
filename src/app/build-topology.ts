import type { ClusterSignals } from "../cluster/signals.js";
import { Leadership, MemoryLeaderLocks } from "../jobs/leadership.js";
import type { RateBuckets } from "../limits/call-rate.js";
import { processRefreshLock, type RefreshLock } from "../login/oauth/refresh-lock.js";
import { singleProcessHolders, type LoginHolders } from "../login/replica/holders.js";
import { PostgresStore } from "../store/postgres/pg-store.js";
import type { TurnStore } from "../turns/turn-store.js";
import type { Core } from "./build-core.js";
import { clusterSignalsFor } from "./cluster.js";
import type { Stoppable } from "./stop-stack.js";
import { turnStoreFor } from "./turn-store-factory.js";

// What differs between one process and replicas on one PostgreSQL, chosen once from the store:
// signals, leader locks, the refresh lock, the turn store, login holders, the rate buckets and
// whether a start expires approvals left pending. Its stop hands back the leadership it holds.

/** The deployment's adapters: one process (SQLite) or replicas sharing a PostgreSQL. */
export interface Topology extends Stoppable {
  /** The shared database of replicas (its event relay); undefined when this process is alone. */
  readonly shared: PostgresStore | undefined;
  /** Signals between replicas (PostgreSQL NOTIFY; in-process on SQLite): decisions, ends, membership. */
  readonly signals: ClusterSignals;
  readonly leadership: Leadership;
  readonly refreshLock: RefreshLock;
  /** The OAuth refresher's lock across replicas; unset: this process's own. */
  readonly oauthLock: RefreshLock | undefined;
  readonly turns: TurnStore;
  readonly loginHolders: LoginHolders;
  readonly rateBuckets: RateBuckets | undefined;
  /** Alone, approvals pending at start were abandoned by this process's predecessor; with replicas, not. */
  readonly expireAbandoned: boolean;
}

/** Builds the adapter set the store implies. */
export function buildTopology(core: Core): Topology {
  const { store, config, log, clock, keys } = core;
  // Replicas on one PostgreSQL share its locks (job leadership, OAuth refresh); with SQLite this process is alone.
  const sharedDb = store instanceof PostgresStore ? store : undefined;
  const leadership = new Leadership({ locks: sharedDb?.locks ?? new MemoryLeaderLocks(), log });
  return {
    shared: sharedDb,
    signals: clusterSignalsFor(store, { log, clock, keys: () => keys }),
    leadership,
    refreshLock: sharedDb?.locks ?? processRefreshLock,
    oauthLock: sharedDb?.locks,
    turns: turnStoreFor(store, config.turns),
    // Replicas on PostgreSQL forward a login to the one holding it; with SQLite every flow is local.
    loginHolders: sharedDb?.loginHolders ?? singleProcessHolders,
    rateBuckets: sharedDb?.rateBuckets,
    expireAbandoned: !sharedDb,
    stop: () => leadership.close(),
  };
}
