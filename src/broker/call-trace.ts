import { newId } from "../domain/ids.js";
import type { Logger } from "../log/logger.js";
import type { Metrics } from "../metrics/metrics.js";
import type { CallOutcome } from "./answer.js";

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

/** One line per call in the log and one sample in the metrics: ids, codes and timings only. */
export function reportCall(d: { metrics: Metrics; log: Logger }, input: { service: string; tool: string }, outcome: CallOutcome, trace: CallTrace): void {
  const result = outcome.kind === "ok" ? (outcome.result.isError ? "vendor_tool_error" : "ok") : outcome.code;
  const via = outcome.kind === "ok" ? outcome.via : (trace.via ?? "none");
  const brokerMs = trace.brokerMs();
  d.metrics.callFinished({ service: input.service, tool: input.tool, outcome: result, via, brokerSeconds: brokerMs / 1000, vendorSeconds: trace.vendorMs === undefined ? undefined : trace.vendorMs / 1000 });
  d.log.info("mcp_call done", {
    service: input.service.slice(0, 100),
    tool: input.tool.slice(0, 100),
    outcome: result,
    via,
    ms: Math.round(trace.elapsedMs()),
    brokerMs: Math.round(brokerMs),
    vendorMs: trace.vendorMs === undefined ? null : Math.round(trace.vendorMs),
  });
}
