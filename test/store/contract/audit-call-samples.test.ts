import { describe, expect, it } from "vitest";
import type { AuditEvent } from "../../../src/audit/event.js";
import { backends } from "./backends.js";

// callSamples, the Activity view's one read: the call outcome rows of a time range (never the
// call_started rows, never other events), one team or all, newest first, bounded by its limit.

const BACKENDS = backends();

describe.each(BACKENDS)("audit.callSamples on $name", (be) => {
  it("reads the call and call_denied rows of [since, until), newest first, by team", async () => {
    const h = await be.harness();
    const rows: AuditEvent[] = [
      { at: 99, event: "call", teamId: "T1", decision: "own", durationMs: 1 },
      { at: 100, event: "call_started", teamId: "T1", decision: "own", callId: "call_a" },
      { at: 110, event: "call", teamId: "T1", decision: "own", durationMs: 42, callId: "call_a", resultBytes: 10 },
      {
        at: 120,
        event: "call_denied",
        teamId: "T1",
        decision: "needs_connect",
        errorCode: "needs_connect",
        durationMs: 3,
      },
      { at: 130, event: "approval_decided", teamId: "T1", decision: "allowed_once" },
      { at: 140, event: "call", teamId: "T2", decision: "grant", durationMs: 7 },
      { at: 150, event: "call", teamId: "T1", decision: "approval_once", errorCode: "vendor_error", durationMs: null },
      { at: 200, event: "call", teamId: "T1", decision: "own", durationMs: 5 },
    ];
    await h.store.audit.append(rows);
    const t1 = await h.store.audit.callSamples({ since: 100, until: 200, teamId: "T1", limit: 100 });
    expect(t1).toEqual({
      truncated: false,
      samples: [
        { at: 150, event: "call", decision: "approval_once", errorCode: "vendor_error", durationMs: null },
        { at: 120, event: "call_denied", decision: "needs_connect", errorCode: "needs_connect", durationMs: 3 },
        { at: 110, event: "call", decision: "own", errorCode: null, durationMs: 42 },
      ],
    });
    const all = await h.store.audit.callSamples({ since: 0, until: 1000, limit: 100 });
    expect(all.samples.map((s) => s.at)).toEqual([200, 150, 140, 120, 110, 99]);
  });

  it("keeps the newest rows within the limit and says the range held more", async () => {
    const h = await be.harness();
    await h.store.audit.append(
      Array.from(
        { length: 5 },
        (_, i): AuditEvent => ({ at: 10 + i, event: "call", teamId: "T1", decision: "own", durationMs: i }),
      ),
    );
    const r = await h.store.audit.callSamples({ since: 0, until: 100, teamId: "T1", limit: 3 });
    expect(r.truncated).toBe(true);
    expect(r.samples.map((s) => s.at)).toEqual([14, 13, 12]);
    const exact = await h.store.audit.callSamples({ since: 0, until: 100, teamId: "T1", limit: 5 });
    expect(exact.truncated).toBe(false);
    expect(exact.samples).toHaveLength(5);
    // A silly limit is still a bound: at least one row, never a negative or fractional LIMIT.
    expect((await h.store.audit.callSamples({ since: 0, until: 100, limit: -4 })).samples).toHaveLength(1);
    expect((await h.store.audit.callSamples({ since: 0, until: 100, limit: 2.7 })).samples).toHaveLength(2);
  });
});
