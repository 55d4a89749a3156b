import type { Config } from "../config/env.js";
import { PostgresStore } from "../store/postgres/pg-store.js";
import type { Store } from "../store/store.js";
import { MemoryTurnStore, type TurnStore } from "../turns/turn-store.js";

/**
 * The turn store of this process: shared through PostgreSQL when the store is PostgreSQL (every
 * replica sees a turn at its next call), this process's memory otherwise (SQLite: one process).
 */
export function turnStoreFor(store: Store, limits: Config["turns"]): TurnStore {
  return store instanceof PostgresStore ? store.turns.withLimits(limits) : new MemoryTurnStore(limits);
}
