import type { ApprovalService } from "../approvals/approval-service.js";
import type { Broker } from "../broker/broker.js";
import type { Clock } from "../clock/clock.js";
import type { ClusterSignals } from "../cluster/signals.js";
import type { Logger } from "../log/logger.js";
import type { McpEndpoint } from "../server/mcp-endpoint.js";
import type { MembershipInvalidation } from "../slack/handlers.js";
import type { Topology } from "../topology/topology.js";
import type { KeyRing } from "../vault/keyring.js";

// The composition root's half for signals between replicas: which adapter, and which consumer
// acts on each topic. Every consumer re-reads the database before acting; the polls stay as the
// safety net, so a lost signal only delays.

/** The topology's signals: PostgreSQL NOTIFY sealed under `keys` with replicas, in-process only with one process. */
export function clusterSignalsFor(
  topology: Pick<Topology, "signals">,
  deps: { log: Logger; clock: Clock; keys: () => KeyRing },
): ClusterSignals {
  return topology.signals(deps);
}

/** A membership cache that can forget one channel, or everything after missed signals. */
export interface MembershipCacheControl extends MembershipInvalidation {
  clear(): void;
}

/** What the consumers act on. */
export interface ClusterConsumers {
  readonly approvals: ApprovalService;
  readonly broker: Pick<Broker, "reconcile" | "reconcileConnection">;
  readonly membership?: MembershipCacheControl;
}

/**
 * Subscribes this replica's consumers, then starts receiving. Returns the membership invalidation
 * the Slack handlers use: it forgets the channel here and tells every other replica to.
 */
export async function startClusterSignals(
  signals: ClusterSignals,
  c: ClusterConsumers,
): Promise<{ membership?: MembershipInvalidation }> {
  // A decision committed anywhere: answer the call waiting here on it now, not at the next poll.
  signals.subscribe(
    "approval_decided",
    async ({ approvalId }) => void (await c.approvals.collectDecisions(approvalId)),
  );
  // A connection ended anywhere: if its row says so, its child here dies and its plaintext is forgotten.
  signals.subscribe(
    "connection_ended",
    async ({ connectionId }) => void (await c.broker.reconcileConnection(connectionId)),
  );
  const cache = c.membership;
  if (cache) signals.subscribe("membership_changed", ({ teamId, channelId }) => cache.invalidate(teamId, channelId));
  // Signals may have been missed: re-read every waiting approval and live child, forget every roster.
  signals.onGap(async () => {
    cache?.clear();
    await c.approvals.collectDecisions();
    await c.broker.reconcile();
  });
  await signals.start();
  if (!cache) return {};
  return {
    membership: {
      invalidate: (teamId, channelId) => {
        cache.invalidate(teamId, channelId);
        void signals.publish("membership_changed", { teamId, channelId });
      },
    },
  };
}

/**
 * Cancellations across replicas: a client's `notifications/cancelled` may reach a replica other than
 * the one running the request it names (round robin); it is announced, and the replica holding the
 * session delivers it to its own transport. A lost signal leaves the call to its deadline, as before.
 */
export function relayCancellations(
  signals: ClusterSignals,
  mcp: Pick<McpEndpoint, "onCancelled" | "cancelFromElsewhere">,
): void {
  mcp.onCancelled = (sessionId, requestId) => void signals.publish("call_cancelled", { sessionId, requestId });
  signals.subscribe(
    "call_cancelled",
    async ({ sessionId, requestId }) => void (await mcp.cancelFromElsewhere(sessionId, requestId)),
  );
}
