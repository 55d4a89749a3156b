import type { Clock } from "../clock/clock.js";
import { newId } from "../domain/ids.js";
import type { CallEventSink } from "../events/event-bus.js";
import type { CallOutcome } from "./answer.js";
import { type CallPlan, eventBase } from "./call-plan.js";

/**
 * One mcp_call's id and timings. The id is the `call_id` of its audit rows and of every log line
 * written while it runs; the timings split broker overhead from the vendor and the owner's wait.
 */
export class CallTrace {
  readonly callId = newId("call");
  readonly startedAt = performance.now();
  /** The vendor's tools/call round trip, once the call reached a vendor. */
  vendorMs: number | undefined;
  /** How the call was decided to run (own, grant, shared, approval_…), once it was. */
  via: string | undefined;
  /** Time spent waiting for an owner's approval (neither broker nor vendor time). */
  approvalMs = 0;

  /** Milliseconds since the call started. */
  elapsedMs(): number {
    return performance.now() - this.startedAt;
  }

  /** Broker overhead: the whole call less the vendor's answer and the approval wait. */
  brokerMs(): number {
    return Math.max(0, this.elapsedMs() - (this.vendorMs ?? 0) - this.approvalMs);
  }
}

/** Emits the call's `call.ended` event (the metrics and the log line consume it): ids, codes and timings only. */
export function reportCall(
  d: { events: CallEventSink; clock: Clock },
  plan: CallPlan,
  outcome: CallOutcome,
  trace: CallTrace,
): void {
  const result = outcome.kind === "ok" ? (outcome.result.isError ? "vendor_tool_error" : "ok") : outcome.code;
  const via = outcome.kind === "ok" ? outcome.via : (trace.via ?? "none");
  d.events.emit({
    type: "call.ended",
    ...eventBase(plan, d.clock.now()),
    outcome: result,
    via,
    durationMs: ms(trace.elapsedMs()),
    brokerMs: ms(trace.brokerMs()),
    vendorMs: trace.vendorMs === undefined ? null : ms(trace.vendorMs),
    truncated: outcome.kind === "ok" ? outcome.truncated : null,
  });
}

/** Milliseconds to the microsecond: precise enough for the histograms, short on the wire. */
const ms = (v: number): number => Math.round(v * 1000) / 1000;
