// The lifecycle events of one mcp_call, as the call path emits them on the one internal stream
// (event-bus.ts). They carry identifiers, codes and timings, and a progress message already
// redacted with the connection's credential forms: never arguments, results or secrets, so any
// subscriber (metrics, the log, GET /v1/events) may see them for its own team.

/** The longest progress message an event carries (after redaction); longer ones are cut. */
export const PROGRESS_MESSAGE_MAX = 500;

/** What every event of one call carries: which call, when (the broker's clock), where and by whom. */
export interface CallEventBase {
  readonly callId: string;
  readonly at: number;
  readonly teamId: string;
  readonly channelId: string;
  readonly threadTs: string;
  /** The user whose turn it was when the call arrived; null when no turn was known. */
  readonly callerUserId: string | null;
  readonly service: string;
  readonly tool: string;
}

/** How an owner's approval ended, as the waiting call learned it. */
export type ApprovalDecision =
  | "allowed_thread"
  | "allowed_once"
  | "denied"
  | "expired"
  | "cancelled"
  | "interrupted"
  | "unavailable";

/** One lifecycle point of a call: started, progress, approval asked/decided, ended. */
export type CallEvent =
  | (CallEventBase & { readonly type: "call.started" })
  | (CallEventBase & {
      readonly type: "call.progress";
      readonly progress: number;
      readonly total: number | null;
      readonly message: string | null;
    })
  | (CallEventBase & {
      readonly type: "approval.asked";
      readonly ownerUserId: string;
      readonly connectionId: string;
      readonly reason: "no_grant" | "write_under_grant";
    })
  | (CallEventBase & {
      readonly type: "approval.decided";
      readonly ownerUserId: string;
      readonly connectionId: string;
      readonly decision: ApprovalDecision;
      readonly waitedMs: number;
    })
  | (CallEventBase & {
      readonly type: "call.ended";
      /** "ok", "vendor_tool_error" or the failure code the caller was given. */
      readonly outcome: string;
      /** How it ran (own, grant, shared, approval_once, approval_thread) or "none". */
      readonly via: string;
      readonly durationMs: number;
      /** Broker time: the whole call less the vendor's answer and an owner's approval wait. */
      readonly brokerMs: number;
      /** The vendor's round trip, when the call reached a vendor. */
      readonly vendorMs: number | null;
      /** Whether the result was cut at the inline limit (ok calls only). */
      readonly truncated: boolean | null;
    });

/** The kinds of event, as named on the wire (`event:` of GET /v1/events). */
export type CallEventType = CallEvent["type"];

/** A progress message fit for an event: cut to PROGRESS_MESSAGE_MAX; the caller redacts it first. */
export function progressMessage(redacted: string | undefined): string | null {
  if (redacted === undefined || redacted === "") return null;
  return redacted.length > PROGRESS_MESSAGE_MAX ? `${redacted.slice(0, PROGRESS_MESSAGE_MAX - 1)}…` : redacted;
}
