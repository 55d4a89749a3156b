// The metrics port: what the core reports, in its own words. The Prometheus adapter
// (prometheus.ts) is built by the composition root only; everything else gets this interface,
// and a component built without one reports to `noMetrics`.

import type { LimitKind } from "../limits/limit-kind.js";

/** One finished mcp_call, as the metrics see it: labels are bounded by the adapter. */
export interface CallMetric {
  readonly service: string;
  readonly tool: string;
  /** "ok", "vendor_tool_error" or the failure code. */
  readonly outcome: string;
  /** How it ran (own, grant, shared, approval_once, approval_thread) or "none" when it did not. */
  readonly via: string;
  /** Time spent in the broker: everything but the vendor's own answer and an owner's approval. */
  readonly brokerSeconds: number;
  /** The vendor's tools/call round trip, when the call reached a vendor. */
  readonly vendorSeconds: number | undefined;
}

/** What the core reports; every method is cheap, synchronous and never throws. */
export interface Metrics {
  callFinished(c: CallMetric): void;
  /** A call waited for a free vendor slot; `outcome` says whether it got one. */
  poolWaited(seconds: number, outcome: "slot" | "timeout"): void;
  /** An approval was decided (allowed_thread, allowed_once, denied) or expired, `seconds` after it was asked. */
  approvalDecided(decision: string, seconds: number): void;
  /** A best-effort audit row could not be written. */
  auditWriteFailed(event: string): void;
  /** A periodic job (ttl reaper, idle reaper, login reaper) finished one pass. */
  jobRan(job: string, outcome: "ok" | "failed", seconds: number): void;
  /** A per-tenant limit refused something (a call over its rate, a child, a login, a session, a stream). */
  limitRefused(limit: LimitKind): void;
}

/** Metrics that go nowhere: the default of every component built without an adapter. */
export const noMetrics: Metrics = Object.freeze({
  callFinished: () => {},
  poolWaited: () => {},
  approvalDecided: () => {},
  auditWriteFailed: () => {},
  jobRan: () => {},
  limitRefused: () => {},
});
