import { newId } from "../connections/ids.js";

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
