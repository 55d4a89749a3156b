import type { Config } from "../config/env.js";
import type { Topology } from "../topology/topology.js";
import type { TurnStore } from "../turns/turn-store.js";

/**
 * The turn store of this process: shared through PostgreSQL with replicas (every replica sees a
 * turn at its next call), this process's memory with one process (SQLite).
 */
export function turnStoreFor(topology: Pick<Topology, "turns">, limits: Config["turns"]): TurnStore {
  return topology.turns(limits);
}
