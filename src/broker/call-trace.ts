import type { Clock } from "../clock/clock.js";
import { newCallId } from "../domain/ids.js";
import type { CallEventSink } from "../events/event-bus.js";
import type { Logger } from "../log/logger.js";
import type { CallOutcome } from "./answer.js";
import { type CallPlan, eventBase } from "./call-plan.js";

/**
 * One mcp_call's id and timings. The id is the `call_id` of its audit rows and of every log line
 * written while it runs; the timings split broker overhead from the vendor and the owner's wait.
 */
export class CallTrace {
  readonly callId = newCallId();
  readonly startedAt = performance.now();
  /** The call's logger: `log` (the request's) with `callId` bound. Every line of the call goes through it. */
  readonly log: Logger;
  /** The vendor's tools/call round trip, once the call reached a vendor. */
  vendorMs: number | undefined;
  /** How the call was decided to run (own, grant, shared, approval_…), once it was. */
  via: string | undefined;
  /** Time spent waiting for an owner's approval (neither broker nor vendor time). */
  approvalMs = 0;

  constructor(log: Logger) {
    this.log = log.with({ callId: this.callId });
  }

  /** Milliseconds since the call started. */
  elapsedMs(): number {
    return performance.now() - this.startedAt;
  }

  /** Broker overhead: the whole call less the vendor's answer and the approval wait. */
  brokerMs(): number {
    return Math.max(0, this.elapsedMs() - (this.vendorMs ?? 0) - this.approvalMs);
  }
}

/**
 * Emits the call's `call.ended` event (the metrics consume it) and writes its one `mcp_call done`
 * line through the call's logger (so it carries `requestId` and `callId`): ids, codes and timings only.
 */
export function reportCall(
  d: { events: CallEventSink; clock: Clock },
  plan: CallPlan,
  outcome: CallOutcome,
  trace: CallTrace,
): void {
  const result = outcome.kind === "ok" ? (outcome.result.isError ? "vendor_tool_error" : "ok") : outcome.code;
  const via = outcome.kind === "ok" ? outcome.via : (trace.via ?? "none");
  const durationMs = ms(trace.elapsedMs());
  const brokerMs = ms(trace.brokerMs());
  const vendorMs = trace.vendorMs === undefined ? null : ms(trace.vendorMs);
  d.events.emit({
    type: "call.ended",
    ...eventBase(plan, d.clock.now()),
    outcome: result,
    via,
    durationMs,
    brokerMs,
    vendorMs,
    truncated: outcome.kind === "ok" ? outcome.truncated : null,
  });
  trace.log.info("mcp_call done", {
    service: plan.serviceName.slice(0, 100),
    tool: plan.tool.slice(0, 100),
    outcome: result,
    via,
    ms: Math.round(durationMs),
    brokerMs: Math.round(brokerMs),
    vendorMs: vendorMs === null ? null : Math.round(vendorMs),
  });
}

/** Milliseconds to the microsecond: precise enough for the histograms, short on the wire. */
const ms = (v: number): number => Math.round(v * 1000) / 1000;
