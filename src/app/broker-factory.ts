import path from "node:path";
import { ApprovalService } from "../approvals/approval-service.js";
import { type ApprovalChannel, noApprovalChannel } from "../approvals/channel.js";
import { Broker } from "../broker/broker.js";
import type { BrokerDeps } from "../broker/deps.js";
import type { ClusterSignals } from "../cluster/signals.js";
import { metricsFromEvents } from "../events/call-consumers.js";
import { CallEventBus, type CallEventSink } from "../events/event-bus.js";
import type { ResultLimits } from "../hygiene/truncate.js";
import { CallRateGate, type CallRateLimits, MemoryRateBuckets, type RateBuckets } from "../limits/call-rate.js";
import { noMembership } from "../membership/membership.js";
import { type Metrics, noMetrics } from "../metrics/metrics.js";
import { PinService } from "../pinning/service.js";
import { ChildLedger } from "../pool/child-ledger.js";
import type { BackoffSource, VendorLauncher } from "../pool/launcher.js";
import { VendorPool } from "../pool/pool.js";
import { RESULT_STORE_DEFAULTS, ResultStore } from "../results/result-store.js";
import { MemoryTurnStore } from "../turns/turn-store.js";
import { buildLauncher } from "./launcher.js";

// The broker's part of the composition root: the launcher, crash ledger, pool and approval service
// are built here from settings, and handed to the broker with everything else in one BrokerDeps.

/** The adapters the app already has: they reach BrokerDeps as they are. */
type GivenDeps = Pick<BrokerDeps, "store" | "vault" | "registry" | "lifecycle" | "clock" | "log"> &
  Partial<Pick<BrokerDeps, "membership" | "turns" | "metrics" | "limits" | "callTimeoutMs" | "refresher" | "consent">> &
  Partial<Pick<BrokerDeps, "credentialCache" | "completions" | "pins" | "results">>;

/** The pool's settings (SLAUDE_POOL_*, SLAUDE_CHILD_UID_BASE). */
export interface PoolSettings {
  maxChildren?: number;
  idleMs?: number;
  acquireTimeoutMs?: number;
  stopGraceMs?: number;
  childUidBase?: number | undefined;
}

/**
 * The broker's one settings object: the adapters the app has (passed through into BrokerDeps) and
 * the settings of the parts built here; defaults for the rest (PinService and ResultStore too, when
 * the root does not hand its own).
 */
export interface BrokerOptions extends GivenDeps {
  /** Where per-connection HOME/TMPDIR and the child ledger live (under the data dir). */
  readonly runDir: string;
  readonly childBaseEnv: Readonly<Record<string, string>>;
  readonly pool?: PoolSettings;
  /** The result store's TTL and per-team cap (SLAUDE_RESULT_TTL_SECONDS, SLAUDE_RESULT_STORE_MAX_BYTES_PER_TEAM). */
  readonly resultStore?: { ttlMs?: number; maxBytesPerTeam?: number };
  readonly approvalTimeoutMs?: number;
  readonly approvalChannel?: ApprovalChannel;
  /** Replaces the process launcher (and its backoff): tests of the pool bookkeeping. */
  readonly launcher?: VendorLauncher & Partial<BackoffSource>;
  /** Where approval decisions are announced to the other replicas (src/cluster). */
  readonly signals?: ClusterSignals;
  /** Limits per tenant: the call rates (unset: none) and one team's cap on vendors (unset: the whole pool). */
  readonly tenantLimits?: { readonly callRate?: CallRateLimits; readonly childrenPerTeam?: number };
  /** Where the call-rate buckets live: PostgreSQL's shared table with replicas; default this process's memory. */
  readonly rateBuckets?: RateBuckets;
}

/** Defaults of the pool settings (SLAUDE_POOL_*). */
export const POOL_DEFAULTS = { maxChildren: 32, idleMs: 600_000, acquireTimeoutMs: 30_000 } as const;

/** Default bounds of a result shown inline (the rest is kept in the result store). */
export const RESULT_LIMIT_DEFAULTS: ResultLimits = { maxBytes: 50_000, maxLines: 2_000 };

/** What the result store is built from. */
type ResultStoreSettings = Pick<BrokerOptions, "store" | "vault" | "clock" | "log" | "resultStore" | "limits">;

/** The result store behind truncated results' resource links, with its TTL and per-team cap. */
export function buildResultStore(o: ResultStoreSettings): ResultStore {
  const { store, vault, clock, log } = o;
  return new ResultStore(
    { results: store.results, audit: store.audit, vault, clock, log },
    {
      ttlMs: o.resultStore?.ttlMs ?? RESULT_STORE_DEFAULTS.ttlMs,
      maxBytesPerTeam: o.resultStore?.maxBytesPerTeam ?? RESULT_STORE_DEFAULTS.maxBytesPerTeam,
      pageLimits: o.limits ?? RESULT_LIMIT_DEFAULTS,
    },
  );
}

/** Builds the broker's adapters (launcher, ledger, pool, approvals) and the broker over them and `o`. */
export function buildBroker(o: BrokerOptions): Broker {
  const { runDir, childBaseEnv, pool: poolSettings, resultStore, approvalTimeoutMs, approvalChannel, ...rest } = o;
  const { launcher: given, signals, tenantLimits, rateBuckets, ...passed } = rest;
  const ledger = new ChildLedger(path.join(runDir, "children"), path.join(runDir, "vendors"));
  const maxChildren = poolSettings?.maxChildren ?? POOL_DEFAULTS.maxChildren;
  // One event stream: the call path, the pool and the launcher emit on it; the metrics, the
  // per-call log line and GET /v1/events consume it.
  const events = new CallEventBus({ log: o.log });
  const launcher = given ?? brokerLauncher(o, ledger, maxChildren, events);
  const metrics = o.metrics ?? noMetrics;
  const perTeam = tenantLimits?.childrenPerTeam;
  const pool = new VendorPool(
    launcher,
    {
      maxChildren,
      idleMs: poolSettings?.idleMs ?? POOL_DEFAULTS.idleMs,
      acquireTimeoutMs: poolSettings?.acquireTimeoutMs ?? POOL_DEFAULTS.acquireTimeoutMs,
      ...(perTeam !== undefined ? { maxChildrenPerTeam: perTeam } : {}),
    },
    o.clock,
    o.log,
    metrics,
    events,
  );
  metricsFromEvents(events, metrics);
  const approvals = new ApprovalService({
    store: o.store,
    channel: approvalChannel ?? noApprovalChannel,
    clock: o.clock,
    log: o.log,
    timeoutMs: approvalTimeoutMs ?? 120_000,
    metrics,
    ...(signals ? { signals } : {}),
  });
  const callRate = callRateGate(o, metrics);
  return new Broker({
    ...passed,
    membership: o.membership ?? noMembership,
    turns: o.turns ?? new MemoryTurnStore(),
    metrics,
    limits: o.limits ?? RESULT_LIMIT_DEFAULTS,
    callTimeoutMs: o.callTimeoutMs ?? 120_000,
    pins: o.pins ?? new PinService({ store: o.store, clock: o.clock, log: o.log }),
    results: o.results ?? buildResultStore(o),
    pool,
    approvals,
    ledger,
    backoff: {
      backoffOf: (id) => launcher.backoffOf?.(id),
      unavailableOf: (id) => launcher.unavailableOf?.(id),
      eraOf: (s) => launcher.eraOf?.(s),
    },
    events,
    ...(callRate ? { callRate } : {}),
  });
}

/** The call rate per user and per team, when SLAUDE_*_CALL_RATE sets one; unset: no gate. */
function callRateGate(o: BrokerOptions, metrics: Metrics): CallRateGate | undefined {
  const limits = o.tenantLimits?.callRate;
  if (!limits) return undefined;
  const buckets = o.rateBuckets ?? new MemoryRateBuckets();
  return new CallRateGate({ buckets, limits, clock: o.clock, refused: (limit) => metrics.limitRefused(limit) });
}

/** The pool's launcher of real children, under `<runDir>/vendors` (uids from SLAUDE_CHILD_UID_BASE when root). */
function brokerLauncher(o: BrokerOptions, ledger: ChildLedger, maxChildren: number, events: CallEventSink) {
  const vendorsDir = path.join(o.runDir, "vendors");
  return buildLauncher({
    childBaseEnv: o.childBaseEnv,
    vendorsDir,
    traversed: [path.dirname(o.runDir), o.runDir, vendorsDir],
    ledger,
    uids: { base: o.pool?.childUidBase, count: maxChildren },
    stopGraceMs: o.pool?.stopGraceMs,
    events,
    clock: o.clock,
    log: o.log,
  });
}
