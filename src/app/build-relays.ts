import { AuditTail } from "../events/audit-tail.js";
import { EventRelay } from "../events/relay.js";
import { stopJobs } from "./build-jobs.js";
import { relayCancellations, startClusterSignals } from "./cluster.js";
import type { Parts } from "./parts.js";
import { registerSlackApp } from "./slack-tenants.js";
import type { Stoppable } from "./stop-stack.js";

// The relays builder: what reaches this replica from elsewhere. Cluster signals (decisions, ends,
// membership, cancellations), Slack's listeners, the poll of decisions made by another process,
// and the call events of committed audit rows and of other replicas. Its stop, the first of the
// broker's to run, stops receiving and then settles every waiting approval (cards marked expired)
// while Slack, HTTP and the store are still up, so the calls waiting on them answer before the drain.

/** Subscribes the signals' consumers, registers Slack's listeners and starts the tails. */
export async function buildRelays(p: Parts): Promise<Stoppable> {
  const { opts, store, clock, log, keys, registry } = p.core;
  const { broker, pins, lifecycle } = p.broker;
  const { signals, shared } = p.topology;
  const { job } = p;
  const cache = p.workspace.membershipCache;
  const consumers = { approvals: broker.approvals, broker, ...(cache ? { membership: cache } : {}) };
  const cluster = await startClusterSignals(signals, consumers);
  relayCancellations(signals, p.http.mcp);
  const { slack, installations, adapters } = p.workspace.workspace;
  if (slack && installations) {
    const { approvals, turns } = broker;
    const { logins } = p.login;
    registerSlackApp(slack, {
      ...{ installations, store, lifecycle, registry, approvals, turns, pins, logins, clock, log },
      ...(adapters ? { admins: adapters.admins } : {}),
      ...(cluster.membership ? { membership: cluster.membership } : {}),
      onTenantEnded: () => cache?.clear(),
    });
  }
  // `slaude-connect approvals decide` writes the store from another process: waiting calls pick it up here.
  const pollMs = opts.approvalPollIntervalMs ?? 1_000;
  const approvalPoll = job("approval decisions", pollMs, () => broker.approvals.collectDecisions());
  // Lifecycle events of committed audit rows, whoever wrote them (this replica, another, the CLI).
  const auditTail = new AuditTail(store.audit, broker.events, clock);
  await auditTail.start();
  const eventTail = job("event tail", opts.eventTailIntervalMs ?? 1_000, () => auditTail.poll());
  // Replicas hand each other the events that exist only where they happen (calls, vendor children).
  const relay = shared ? { db: shared.db, key: keys.subkey("event-relay") } : undefined;
  const eventRelay = relay ? new EventRelay(broker.events, relay.db, relay.key, { log, clock }) : undefined;
  await eventRelay?.start();
  const stop = async (): Promise<void> => {
    await stopJobs([approvalPoll, eventTail]);
    await eventRelay?.close();
    await signals.close();
    await broker.approvals.shutdown();
  };
  return { stop };
}
