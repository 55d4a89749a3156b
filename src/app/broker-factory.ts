import { chmodSync, mkdirSync } from "node:fs";
import path from "node:path";
import { ApprovalService } from "../approvals/approval-service.js";
import { noApprovalChannel, type ApprovalChannel } from "../approvals/channel.js";
import type { Clock } from "../clock/clock.js";
import type { ClusterSignals } from "../cluster/signals.js";
import type { CacheLimits } from "../config/env.js";
import type { ServiceRegistry } from "../config/registry.js";
import type { ConnectionLifecycle } from "../connections/lifecycle.js";
import { Broker } from "../broker/broker.js";
import type { CompletionBacklog } from "../broker/completion-backlog.js";
import type { ConsentNotifier, CredentialRefresher } from "../broker/ports.js";
import { logFromEvents, metricsFromEvents } from "../events/call-consumers.js";
import { CallEventBus, type CallEventSink } from "../events/event-bus.js";
import { CallRateGate, MemoryRateBuckets, type CallRateLimits, type RateBuckets } from "../limits/call-rate.js";
import type { ResultLimits } from "../hygiene/truncate.js";
import type { Logger } from "../log/logger.js";
import { noMembership, type MembershipSource } from "../membership/membership.js";
import { noMetrics, type Metrics } from "../metrics/metrics.js";
import { ChildLedger } from "../pool/child-ledger.js";
import { ProductionLauncher, UidAllocator, type BackoffSource, type VendorLauncher } from "../pool/launcher.js";
import { VendorPool } from "../pool/pool.js";
import { RESULT_STORE_DEFAULTS, ResultStore } from "../results/result-store.js";
import type { Store } from "../store/store.js";
import { MemoryTurnStore, type TurnStore } from "../turns/turn-store.js";
import type { Vault } from "../vault/vault.js";

// The broker's part of the composition root: the launcher, crash ledger, pool and approval service
// are built here from settings, and handed to the broker as ports.

/** What the broker is built from: settings and the adapters the app already has; defaults for the rest. */
export interface BrokerOptions {
  readonly store: Store;
  readonly vault: Vault;
  readonly registry: ServiceRegistry;
  readonly lifecycle: ConnectionLifecycle;
  readonly clock: Clock;
  readonly log: Logger;
  readonly membership?: MembershipSource;
  readonly approvalChannel?: ApprovalChannel;
  readonly turns?: TurnStore;
  /** Where per-connection HOME/TMPDIR and the child ledger live (under the data dir). */
  readonly runDir: string;
  readonly childBaseEnv: Readonly<Record<string, string>>;
  readonly pool?: { maxChildren?: number; idleMs?: number; acquireTimeoutMs?: number; stopGraceMs?: number; childUidBase?: number | undefined };
  readonly limits?: ResultLimits;
  /** The result store's TTL and per-team cap (SLAUDE_RESULT_TTL_SECONDS, SLAUDE_RESULT_STORE_MAX_BYTES_PER_TEAM). */
  readonly resultStore?: { ttlMs?: number; maxBytesPerTeam?: number };
  readonly callTimeoutMs?: number;
  readonly approvalTimeoutMs?: number;
  /** Refreshes OAuth credentials before calls (src/login/oauth). */
  readonly refresher?: CredentialRefresher;
  /** Delivers the consent card for `connect` (Slack in production). */
  readonly consent?: ConsentNotifier;
  /** Where calls, pool waits, approval decisions and reaper runs are reported (GET /metrics). */
  readonly metrics?: Metrics;
  /** Replaces the process launcher (and its backoff): tests of the pool bookkeeping. */
  readonly launcher?: VendorLauncher & Partial<BackoffSource>;
  /** Bounds the decrypted-credential cache (count and age). */
  readonly credentialCache?: CacheLimits;
  /** Replaces the completion backlog (its bounds): tests of what happens when it is full. */
  readonly completions?: CompletionBacklog;
  /** Where approval decisions are announced to the other replicas (src/cluster). */
  readonly signals?: ClusterSignals;
  /** Limits per tenant: the call rates (unset: none) and one team's cap on vendors (unset: the whole pool). */
  readonly tenantLimits?: { readonly callRate?: CallRateLimits; readonly childrenPerTeam?: number };
  /** Where the call-rate buckets live: PostgreSQL's shared table with replicas; default this process's memory. */
  readonly rateBuckets?: RateBuckets;
}

/** Defaults of the pool settings (SLAUDE_POOL_*). */
export const POOL_DEFAULTS = { maxChildren: 32, idleMs: 600_000, acquireTimeoutMs: 30_000 } as const;

/** Builds the broker's adapters (launcher, ledger, pool, approvals) and the broker over them. */
export function buildBroker(o: BrokerOptions): Broker {
  const ledger = new ChildLedger(path.join(o.runDir, "children"), path.join(o.runDir, "vendors"));
  const maxChildren = o.pool?.maxChildren ?? POOL_DEFAULTS.maxChildren;
  // One event stream: the call path, the pool and the launcher emit on it; the metrics, the
  // per-call log line and GET /v1/events consume it.
  const events = new CallEventBus({ log: o.log });
  const launcher: VendorLauncher & Partial<BackoffSource> = o.launcher ?? productionLauncher(o, ledger, maxChildren, events);
  const metrics = o.metrics ?? noMetrics;
  const pool = new VendorPool(
    launcher,
    {
      maxChildren,
      idleMs: o.pool?.idleMs ?? POOL_DEFAULTS.idleMs,
      acquireTimeoutMs: o.pool?.acquireTimeoutMs ?? POOL_DEFAULTS.acquireTimeoutMs,
      ...(o.tenantLimits?.childrenPerTeam !== undefined ? { maxChildrenPerTeam: o.tenantLimits.childrenPerTeam } : {}),
    },
    o.clock,
    o.log,
    metrics,
    events,
  );
  const limits = o.limits ?? { maxBytes: 50_000, maxLines: 2_000 };
  const results = new ResultStore(
    { results: o.store.results, audit: o.store.audit, vault: o.vault, clock: o.clock, log: o.log },
    { ttlMs: o.resultStore?.ttlMs ?? RESULT_STORE_DEFAULTS.ttlMs, maxBytesPerTeam: o.resultStore?.maxBytesPerTeam ?? RESULT_STORE_DEFAULTS.maxBytesPerTeam, pageLimits: limits },
  );
  metricsFromEvents(events, metrics);
  logFromEvents(events, o.log);
  const approvals = new ApprovalService({ store: o.store, channel: o.approvalChannel ?? noApprovalChannel, clock: o.clock, log: o.log, timeoutMs: o.approvalTimeoutMs ?? 120_000, metrics, ...(o.signals ? { signals: o.signals } : {}) });
  const callRate = o.tenantLimits?.callRate
    ? new CallRateGate({ buckets: o.rateBuckets ?? new MemoryRateBuckets(), limits: o.tenantLimits.callRate, clock: o.clock, refused: (limit) => metrics.limitRefused(limit) })
    : undefined;
  return new Broker({
    store: o.store,
    vault: o.vault,
    registry: o.registry,
    lifecycle: o.lifecycle,
    clock: o.clock,
    log: o.log,
    membership: o.membership ?? noMembership,
    turns: o.turns ?? new MemoryTurnStore(),
    pool,
    approvals,
    ledger,
    backoff: { backoffOf: (id) => launcher.backoffOf?.(id), unavailableOf: (id) => launcher.unavailableOf?.(id), eraOf: (s) => launcher.eraOf?.(s) },
    metrics,
    limits,
    results,
    events,
    callTimeoutMs: o.callTimeoutMs ?? 120_000,
    ...(o.refresher ? { refresher: o.refresher } : {}),
    ...(o.consent ? { consent: o.consent } : {}),
    ...(o.credentialCache ? { credentialCache: o.credentialCache } : {}),
    ...(o.completions ? { completions: o.completions } : {}),
    ...(callRate ? { callRate } : {}),
  });
}

/** The launcher of real children: allowlisted env, private HOME/TMPDIR, process groups, child uids when root. */
function productionLauncher(o: BrokerOptions, ledger: ChildLedger, maxChildren: number, events: CallEventSink): ProductionLauncher {
  const uidBase = o.pool?.childUidBase;
  const perChildUid = uidBase !== undefined && process.geteuid?.() === 0;
  if (perChildUid) {
    // Children under their own uids must traverse to their private HOME: execute-only, no listing.
    for (const d of [path.dirname(o.runDir), o.runDir, path.join(o.runDir, "vendors")]) {
      mkdirSync(d, { recursive: true, mode: 0o711 });
      chmodSync(d, 0o711);
    }
  }
  return new ProductionLauncher({
    baseEnv: o.childBaseEnv,
    runDir: path.join(o.runDir, "vendors"),
    ledger,
    events,
    uids: perChildUid ? new UidAllocator(uidBase, maxChildren) : undefined,
    ...(o.pool?.stopGraceMs !== undefined ? { stopGraceMs: o.pool.stopGraceMs } : {}),
    clock: o.clock,
    log: o.log,
  });
}
