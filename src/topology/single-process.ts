import { LocalClusterSignals } from "../cluster/local-signals.js";
import type { ClusterSignals } from "../cluster/signals.js";
import { MemoryLeaderLocks } from "../jobs/leadership.js";
import { processRefreshLock } from "../login/oauth/refresh-lock.js";
import { singleProcessHolders } from "../login/replica/holders.js";
import { MemorySessionRecords, type SessionRecords } from "../server/session-records.js";
import type { TurnLimits } from "../turns/turn-rules.js";
import { MemoryTurnStore, type TurnStore } from "../turns/turn-store.js";
import type { SignalDeps, Topology } from "./topology.js";

/**
 * One process (the SQLite store): signals stay in the process, locks and login flows are local,
 * turns and MCP session records live in bounded memory, and start-up expires what an earlier run left.
 */
export class SingleProcessTopology implements Topology {
  readonly kind = "single-process";
  readonly leaderLocks = new MemoryLeaderLocks();
  readonly refreshLock = processRefreshLock;
  readonly loginHolders = singleProcessHolders;
  readonly expireAbandonedAtStart = true;

  signals(deps: SignalDeps): ClusterSignals {
    return new LocalClusterSignals(deps.log);
  }

  turns(limits: Partial<TurnLimits>): TurnStore {
    return new MemoryTurnStore(limits);
  }

  sessionRecords(maxSessions: number): SessionRecords {
    return new MemorySessionRecords(maxSessions);
  }
}
