// Every way a broker tool call can end, and the one sentence the model (and through it a person)
// is told for each. Full detail goes to logs and audit; this text never carries vendor bodies,
// internal URLs or secrets. The switch is exhaustive: a new code fails to compile until worded.

/** Codes of calls that did not run (or did not complete). */
export type FailureCode =
  | "no_turn"
  | "on_behalf_of_mismatch"
  | "unknown_service"
  | "not_member"
  | "owner_only"
  | "needs_connect"
  | "approval_denied"
  | "approval_expired"
  | "approval_unavailable"
  | "approval_cancelled"
  | "approval_interrupted"
  | "approval_mismatch"
  | "connection_unusable"
  | "credential_unusable"
  | "vendor_timeout"
  | "vendor_crashed"
  | "vendor_misbehaved"
  | "vendor_error"
  | "vendor_unreachable"
  | "vendor_incompatible"
  | "vendor_backoff"
  | "vendor_disconnected"
  | "vendor_start_failed"
  | "credential_rejected"
  | "pool_busy"
  | "rate_limited"
  | "audit_unavailable"
  | "store_unavailable"
  | "cancelled"
  | "thread_mismatch"
  | "turn_ambiguous"
  | "turn_unknown"
  | "not_found"
  | "invalid_request"
  | "not_available"
  | "consent_unavailable"
  | "tool_quarantined"
  | "tool_unreviewed"
  | "tool_unverified"
  | "tool_changed"
  | "internal_error";

/** Facts a message may mention: user ids, service and tool names (never values). */
export interface MessageFacts {
  readonly service?: string;
  readonly tool?: string;
  readonly turnUser?: string;
  readonly ownerUserId?: string;
  readonly retryAt?: number;
  readonly detail?: string;
  /** store_unavailable: the vendor ran before the database went away (its result is withheld, not lost from the audit). */
  readonly ran?: boolean;
  /** rate_limited: whose call rate was exceeded (the caller's own, or their whole team's). */
  readonly rateScope?: "user" | "team";
  /** rate_limited: whole seconds from now until `retryAt`. */
  readonly retryAfterSeconds?: number;
}

/** How long a refusal says to wait before retrying, in seconds (store_unavailable: a restart or failover takes seconds). */
export function retryAfterSeconds(code: FailureCode): number | undefined {
  return code === "store_unavailable" ? STORE_RETRY_SECONDS : undefined;
}

/** The retry hint of store_unavailable, on /mcp refusals and in the Retry-After of HTTP 503 answers. */
export const STORE_RETRY_SECONDS = 5;

/** The human-readable message for a failure code. */
export function failureMessage(code: FailureCode, f: MessageFacts = {}): string {
  const svc = f.service ? `"${f.service}"` : "the service";
  const owner = f.ownerUserId ? `<@${f.ownerUserId}>` : "the owner";
  switch (code) {
    case "no_turn":
      return "No live turn is known for this thread, so there is no caller to act for. The host must report the turn (POST /v1/turns) before tool calls.";
    case "on_behalf_of_mismatch":
      return `It is <@${f.turnUser}>'s turn in this thread, not the user named in on_behalf_of. Calls always run for the user whose message is being answered; set on_behalf_of to ${f.turnUser}.`;
    case "unknown_service":
      return `There is no service ${svc}.${f.detail ? ` Known services: ${f.detail}.` : ""}`;
    case "not_member":
      return "The caller is not (or can no longer be verified as) a member of this thread's channel, so nothing can run for them here.";
    case "owner_only":
      return `${f.tool ? `"${f.tool}"` : "This tool"} on ${svc} only runs on the caller's own account; ${owner}'s connection cannot be borrowed for it. Call connect(${f.service ?? "service"}) to use your own account.`;
    case "needs_connect":
      return `You have no ${svc} connection usable here. Call connect with service ${svc} to connect your account.`;
    case "approval_denied":
      return `${owner} declined to let this call run on their ${svc} account.`;
    case "approval_expired":
      return `${owner} did not answer the approval request in time, so the call did not run. Ask them, or connect your own account.`;
    case "approval_unavailable":
      return `This call needs ${owner}'s approval, but approval requests cannot be delivered right now (no approval channel is configured or Slack is unreachable), so it did not run.`;
    case "approval_cancelled":
      return "The call was cancelled while waiting for the owner's approval.";
    case "approval_interrupted":
      return "slaude-connect restarted while waiting for the owner's approval, so the call did not run. Ask again.";
    case "approval_mismatch":
      return "The approval does not match this exact call, so it did not run.";
    case "connection_unusable":
      return `The ${svc} connection is no longer active (revoked or expired). Call connect(${f.service ?? "service"}) to connect again.`;
    case "credential_unusable":
      return `The stored ${svc} credential cannot be used (it failed its integrity check), so nothing ran. Reconnect the account.`;
    case "vendor_timeout":
      return `${svc} did not answer in time; the call was stopped.`;
    case "vendor_crashed":
      return `The ${svc} vendor process stopped while handling the call. It is restarted on the next call.`;
    case "vendor_misbehaved":
      return `The ${svc} vendor went over slaude-connect's limits (for example an endless tool list), so it was stopped and the call did not run. The operator can find details in the logs.`;
    case "vendor_error":
      return `${svc} reported an error${f.detail ? `: ${f.detail}` : "."}`;
    case "vendor_unreachable":
      return `${svc} cannot be reached right now${f.detail ? ` (${f.detail})` : ""}${f.retryAt ? `; the next attempt is after ${new Date(f.retryAt).toISOString()}` : ""}.`;
    case "vendor_incompatible":
      return `${svc} speaks another MCP protocol version than slaude-connect asked for (${f.detail ?? "no version in common"}), so nothing ran. Waiting will not fix this: the operator sets "protocol" in the service's registry entry to "auto" or to a version the vendor speaks ("2025-11-25" or "2026-07-28"; docs/service-registry.md).`;
    case "vendor_disconnected":
      return `The connection to ${svc} was lost during the call (${f.detail ?? "connection closed"}); the call was not retried, so check before repeating anything that writes. The next call opens a new connection.`;
    case "vendor_start_failed":
      return `The ${svc} vendor could not be started (${f.detail ?? "start failed"}), so nothing ran. The next call tries to start it again; the operator can find details in the logs.`;
    case "credential_rejected":
      return `${svc} rejected the stored credential (${f.detail ?? "unauthorized"}), so nothing ran. Call connect(${f.service ?? "service"}) to connect the account again.`;
    case "vendor_backoff":
      return `${svc} has been failing to connect${f.detail ? ` (last error: ${f.detail})` : ""}; the next attempt is after ${f.retryAt ? new Date(f.retryAt).toISOString() : "a short wait"}.`;
    case "pool_busy":
      return "Every vendor slot is busy with calls in progress; try again in a moment.";
    case "rate_limited": {
      const who =
        f.rateScope === "team"
          ? "This workspace is making calls faster than its limit allows"
          : "You are making calls faster than your limit allows";
      const when = f.retryAt
        ? `after ${new Date(f.retryAt).toISOString()}${f.retryAfterSeconds !== undefined ? ` (in ${f.retryAfterSeconds} s)` : ""}`
        : "in a moment";
      return `${who}, so this call did not run: nothing was sent to ${svc}. Try again ${when}.`;
    }
    case "audit_unavailable":
      return `slaude-connect could not record this call in its audit log (the database is busy or out of space), so it was not sent to ${svc}: nothing ran. Try again in a moment; the operator can find details in the logs.`;
    case "store_unavailable":
      return f.ran
        ? `The call ran on ${svc}, but slaude-connect's database became unavailable before the call's completion could be recorded, so its result is withheld (the record is written once the database is back). Check before repeating anything that writes; try again in about ${STORE_RETRY_SECONDS} seconds.`
        : `slaude-connect's database is unavailable right now (it may be restarting), so nothing ran. Try again in about ${STORE_RETRY_SECONDS} seconds.`;
    case "cancelled":
      return "The call was cancelled.";
    case "thread_mismatch":
      return "This session is bound to another thread.";
    case "turn_ambiguous":
      return "Turns of more than one person are running in this thread at once, so this call cannot be attributed to one of them and did not run. The host must name the turn of the request (X-Slaude-Turn, the id POST /v1/turns returned).";
    case "turn_unknown":
      return "The turn this request names (X-Slaude-Turn) is not a live turn of this thread: unknown, ended or superseded by a later one. Nothing ran.";
    case "not_found":
      return "No such connection of yours.";
    case "invalid_request":
      return `The request is invalid${f.detail ? `: ${f.detail}` : "."}`;
    case "not_available":
      return (
        f.detail ??
        "Not available on this slaude-connect: it needs a workspace (Slack, configured with the SLACK_* variables), and this one runs without."
      );
    case "consent_unavailable":
      return `The private card to connect ${svc} could not be delivered in Slack right now, so nothing was started. Try again in a moment, or use /connect ${f.service ?? "<service>"} in Slack.`;
    case "tool_quarantined":
      return `${f.tool ? `"${f.tool}"` : "This tool"} on ${svc} is quarantined: its vendor now serves a different definition (description or schema) than the one accepted, so calls to it are refused until an admin reviews the change (slaude-connect registry changes). Nothing ran; existing approvals and thread grants do not cover it.`;
    case "tool_unreviewed":
      return `${f.tool ? `"${f.tool}"` : "This tool"} on ${svc} is new: its vendor started listing it after the service's tools were pinned, and an admin has not reviewed it yet (slaude-connect registry changes), so calls to it are refused. Nothing ran; existing approvals and thread grants do not cover it.`;
    case "tool_unverified":
      return `slaude-connect could not check the definition of ${f.tool ? `"${f.tool}"` : "this tool"} on ${svc} against its pin (the vendor's tool list could not be read or recorded), so nothing ran. Try again in a moment; the operator can find details in the logs.`;
    case "tool_changed":
      return `${svc} started listing ${f.tool ? `"${f.tool}"` : "this tool"} as a new, unpinned tool while this call was prepared, so nothing ran. Call again: an unpinned tool runs only on the caller's own connection.`;
    case "internal_error":
      return "slaude-connect hit an internal error; the call did not complete. The operator can find details in the logs.";
  }
}
