import { describe, expect, it } from "vitest";
import type { AuditEvent, AuditEventKind } from "../../src/audit/event.js";
import { EVENT_TYPES } from "../../src/events/broker-event.js";
import { AUDIT_LIFECYCLE_TYPES, eventFromAudit } from "../../src/events/lifecycle-event.js";

// Which audit rows are lifecycle events, as what, and what of the row an event never carries.

const ROW = {
  at: 1,
  teamId: "T1",
  channelId: "C1",
  threadTs: "1.2",
  callerUserId: "UB",
  ownerUserId: "UA",
  connectionId: "conn_1",
  service: "vendor",
  tool: "read",
  argsHash: "h".repeat(64),
  decision: null,
  actor: null,
} as const;

// Every audit kind, with what it becomes (a Record over the union: a new kind fails to compile here until it is decided).
const EXPECTED: Record<AuditEventKind, string | undefined> = {
  call_started: undefined,
  call: undefined,
  call_denied: undefined,
  approval_requested: "approval.requested",
  approval_decided: "approval.answered",
  approval_rejected_click: undefined,
  grant_created: undefined,
  grant_revoked: undefined,
  connection_created: "connection.created",
  connection_replaced: "connection.replaced",
  connection_revoked: "connection.revoked",
  connection_expired: "connection.expired",
  connection_needs_login: "connection.needs_login",
  connection_refreshed: "connection.refreshed",
  login_started: "login.started",
  login_completed: "login.completed",
  login_refused: "login.failed",
  keys_rotated: undefined,
  result_stored: undefined,
  result_evicted: undefined,
  result_read: undefined,
  admin_action: undefined,
  tool_pin: undefined,
  // Installations are the operator's matter (audit, installations list), not a host's stream.
  installation_installed: undefined,
  installation_updated: undefined,
  installation_refused: undefined,
  installation_disabled: undefined,
  installation_enabled: undefined,
  installation_uninstalled: undefined,
  installation_token_refreshed: undefined,
};

describe("eventFromAudit", () => {
  it("maps every audit kind to its event kind, or to none", () => {
    for (const [kind, type] of Object.entries(EXPECTED)) {
      expect(eventFromAudit({ ...ROW, event: kind as AuditEventKind })?.type, kind).toBe(type);
    }
  });

  it("an approval expired is its own event; tool pins by their change; refusals and invalid clicks are none", () => {
    expect(eventFromAudit({ ...ROW, event: "approval_decided", decision: "expired", actor: "reaper" })?.type).toBe(
      "approval.expired",
    );
    expect(eventFromAudit({ ...ROW, event: "approval_decided", decision: "consumed" })).toBeUndefined();
    const pin = (decision: string) => eventFromAudit({ ...ROW, event: "tool_pin", decision })?.type;
    expect(
      [
        "first_seen",
        "restored",
        "new",
        "quarantined",
        "accepted",
        "rejected",
        "refused_hash_mismatch",
        "click_invalid",
        "refused_not_admin",
      ].map(pin),
    ).toEqual([
      "tool.pinned",
      "tool.pinned",
      "tool.new",
      "tool.quarantined",
      "tool.accepted",
      "tool.rejected",
      undefined,
      undefined,
      undefined,
    ]);
    // Every audit-derived kind names the audit kind it comes from.
    for (const [type, kind] of Object.entries(AUDIT_LIFECYCLE_TYPES)) {
      expect(EVENT_TYPES).toContain(type);
      expect(Object.keys(EXPECTED)).toContain(kind);
    }
  });

  it("never carries the arguments' hash, an operator's name, or a row without a team", () => {
    const approval = eventFromAudit({ ...ROW, event: "approval_requested" } satisfies AuditEvent)!;
    expect(approval.definitionHash).toBeNull();
    expect(JSON.stringify(approval)).not.toContain("h".repeat(64));
    expect(eventFromAudit({ ...ROW, event: "tool_pin", decision: "quarantined" })!.definitionHash).toBe("h".repeat(64));
    expect(eventFromAudit({ ...ROW, event: "connection_revoked", actor: "cli:alice-ops" })!.actor).toBe("cli");
    expect(eventFromAudit({ ...ROW, event: "connection_created", teamId: null })).toBeUndefined();
    expect(eventFromAudit({ ...ROW, event: "connection_created", teamId: "" })).toBeUndefined();
  });
});
