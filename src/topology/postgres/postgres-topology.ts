import type { ClusterSignals } from "../../cluster/signals.js";
import type { SessionRecords } from "../../server/session-records.js";
import type { PgDb } from "../../store/postgres/pg-db.js";
import type { TurnLimits } from "../../turns/turn-rules.js";
import type { ReplicaParts, SignalDeps, Topology } from "../topology.js";
import { PgLocks } from "./locks-repo.js";
import { PgLoginHolders } from "./login-holders-repo.js";
import { PgMcpSessionRepo } from "./mcp-sessions-repo.js";
import { PgRateBuckets } from "./rate-buckets-repo.js";
import { PgClusterSignals } from "./signals-repo.js";
import { PgTurnStore } from "./turns-repo.js";

/**
 * Replicas sharing one PostgreSQL: signals over NOTIFY sealed under the key ring, session advisory
 * locks, login holders and liveness marks, and the turns, MCP session records and call-rate buckets
 * in tables every replica reads. Start-up leaves pending calls alone: a live peer may be running them.
 */
export class PostgresTopology implements Topology, ReplicaParts {
  readonly kind = "replicas";
  readonly locks: PgLocks;
  readonly loginHolders: PgLoginHolders;
  readonly rateBuckets: PgRateBuckets;
  /** The shared MCP session records (no per-process cap: the table holds every replica's). */
  readonly mcpSessions: PgMcpSessionRepo;
  readonly expireAbandonedAtStart = false;
  private readonly turnStore: PgTurnStore;

  constructor(readonly db: PgDb) {
    this.locks = new PgLocks(db);
    this.loginHolders = new PgLoginHolders(db);
    this.rateBuckets = new PgRateBuckets(db);
    this.mcpSessions = new PgMcpSessionRepo(db);
    this.turnStore = new PgTurnStore(db);
  }

  get leaderLocks(): PgLocks {
    return this.locks;
  }

  get refreshLock(): PgLocks {
    return this.locks;
  }

  get replicas(): ReplicaParts {
    return this;
  }

  signals(deps: SignalDeps): ClusterSignals {
    return new PgClusterSignals(this.db, { log: deps.log, clock: deps.clock, keys: deps.keys() });
  }

  turns(limits: Partial<TurnLimits>): PgTurnStore {
    return this.turnStore.withLimits(limits);
  }

  sessionRecords(_maxSessions: number): SessionRecords {
    return this.mcpSessions;
  }
}
