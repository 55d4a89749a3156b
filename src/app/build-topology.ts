import type { ClusterSignals } from "../cluster/signals.js";
import { Leadership } from "../jobs/leadership.js";
import type { RateBuckets } from "../limits/call-rate.js";
import type { RefreshLock } from "../login/oauth/refresh-lock.js";
import type { LoginHolders } from "../login/replica/holders.js";
import type { ReplicaParts, Topology } from "../topology/topology.js";
import type { TurnStore } from "../turns/turn-store.js";
import type { Core } from "./build-core.js";
import { clusterSignalsFor } from "./cluster.js";
import type { Stoppable } from "./stop-stack.js";
import { turnStoreFor } from "./turn-store-factory.js";

// What differs between one process and replicas on one PostgreSQL, built from the topology the
// store factory chose with the database (src/topology): signals, leadership over its leader locks,
// the refresh lock, the turn store, login holders, the rate buckets and whether a start expires
// approvals left pending. Its stop hands back the leadership it holds.

/** The deployment's parts as the later builders use them. */
export interface TopologyParts extends Stoppable {
  /** The adapter set itself (MCP session records are taken from it by the HTTP builder). */
  readonly topology: Topology;
  /** The replicas' shared parts (the event relay's database); undefined when this process is alone. */
  readonly shared: ReplicaParts | undefined;
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

/** Builds the parts of the adapter set the store implies. */
export function buildTopology(core: Core): TopologyParts {
  const { deployment: topology, config, log, clock, keys } = core;
  const leadership = new Leadership({ locks: topology.leaderLocks, log });
  const shared = topology.replicas;
  return {
    topology,
    shared,
    signals: clusterSignalsFor(topology, { log, clock, keys: () => keys }),
    leadership,
    refreshLock: topology.refreshLock,
    oauthLock: shared ? topology.refreshLock : undefined,
    turns: turnStoreFor(topology, config.turns),
    loginHolders: topology.loginHolders,
    rateBuckets: shared?.rateBuckets,
    expireAbandoned: topology.expireAbandonedAtStart,
    stop: () => leadership.close(),
  };
}
