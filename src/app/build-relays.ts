import { AuditTail } from "../events/audit-tail.js";
import { EventRelay } from "../events/relay.js";
import type { BrokerStage } from "./build-broker.js";
import type { Core } from "./build-core.js";
import type { HttpStage } from "./build-http.js";
import { stopJobs, type StartJob } from "./build-jobs.js";
import type { LoginStage } from "./build-login.js";
import type { Topology } from "./build-topology.js";
import type { WorkspaceStage } from "./build-workspace.js";
import { relayCancellations, startClusterSignals } from "./cluster.js";
import { registerSlackApp } from "./slack-tenants.js";
import type { Stoppable } from "./stop-stack.js";

// The relays builder: what reaches this replica from elsewhere. Cluster signals (decisions, ends,
// membership, cancellations), Slack's listeners, the poll of decisions made by another process,
// and the call events of committed audit rows and of other replicas. Its stop, the first of the
// broker's to run, stops receiving and then settles every waiting approval (cards marked expired)
// while Slack, HTTP and the store are still up, so the calls waiting on them answer before the drain.

/** Subscribes the signals' consumers, registers Slack's listeners and starts the tails. */
export async function buildRelays(core: Core, t: Topology, w: WorkspaceStage, b: BrokerStage, h: HttpStage, l: LoginStage, job: StartJob): Promise<Stoppable> {
  const { opts, store, clock, log, keys, registry } = core;
  const { broker, pins, lifecycle } = b;
  const { signals, shared } = t;
  const cache = w.membershipCache;
  const cluster = await startClusterSignals(signals, { approvals: broker.approvals, broker, ...(cache ? { membership: cache } : {}) });
  relayCancellations(signals, h.mcp);
  const { slack, installations, adapters } = w.workspace;
  if (slack && installations) {
    const { approvals, turns } = broker;
    const { logins } = l;
    registerSlackApp(slack, {
      ...{ installations, store, lifecycle, registry, approvals, turns, pins, logins, clock, log },
      ...(adapters ? { admins: adapters.admins } : {}),
      ...(cluster.membership ? { membership: cluster.membership } : {}),
      onTenantEnded: () => cache?.clear(),
    });
  }
  // `slaude-connect approvals decide` writes the store from another process: waiting calls pick it up here.
  const approvalPoll = job("approval decisions", opts.approvalPollIntervalMs ?? 1_000, () => broker.approvals.collectDecisions());
  // Lifecycle events of committed audit rows, whoever wrote them (this replica, another, the CLI).
  const auditTail = new AuditTail(store.audit, broker.events, clock);
  await auditTail.start();
  const eventTail = job("event tail", opts.eventTailIntervalMs ?? 1_000, () => auditTail.poll());
  // Replicas hand each other the events that exist only where they happen (calls, vendor children).
  const eventRelay = shared ? new EventRelay(broker.events, shared.db, keys.subkey("event-relay"), { log, clock }) : undefined;
  await eventRelay?.start();
  const stop = async (): Promise<void> => {
    await stopJobs([approvalPoll, eventTail]);
    await eventRelay?.close();
    await signals.close();
    await broker.approvals.shutdown();
  };
  return { stop };
}
