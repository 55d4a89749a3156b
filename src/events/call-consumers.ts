import type { Metrics } from "../metrics/metrics.js";
import type { CallEventBus, Subscription } from "./event-bus.js";

// The internal consumer of the call event stream: the metrics learn of a finished call from its
// `call.ended` event, not from a hook of their own in the call path; a call relayed from another
// replica is that replica's to count. (The one `mcp_call done` log line is written by the call
// itself, through its logger, so it carries the call's requestId and callId: call-trace.ts.)
// (The audit's rows are not a consumer: the `call_started` row must be committed before the vendor
// runs and the completion row before the result is returned, which a fire-and-forget stream cannot
// promise; docs/host-integration.md says so.)

/** Reports every `call.ended` to the metrics port; undefined when the bus is full. */
export function metricsFromEvents(bus: CallEventBus, metrics: Pick<Metrics, "callFinished">): Subscription | undefined {
  return bus.subscribe((e) => {
    if (e.type !== "call.ended" || bus.isRemote(e)) return;
    metrics.callFinished({
      service: e.service,
      tool: e.tool,
      outcome: e.outcome,
      via: e.via,
      brokerSeconds: e.brokerMs / 1000,
      vendorSeconds: e.vendorMs === null ? undefined : e.vendorMs / 1000,
    });
  });
}
