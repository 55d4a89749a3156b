import { describe, expect, it } from "vitest";
import { definitionHash, definitionOf, definitionText, MAX_DEFINITION_CHARS } from "../../src/pinning/definition.js";
import { diffDefinitions, MAX_DIFF_LINES } from "../../src/pinning/diff.js";
import {
  decide,
  gate,
  type ObservedTool,
  observe,
  type PlannedPin,
  runVerdict,
  staleReading,
  type VendorObservation,
} from "../../src/pinning/policy.js";
import type { PinStatus, ToolPin } from "../../src/store/records.js";

// The pure pin rules: what a tool list does to the pins, what an admin's decision does, and the two
// call checks. The call checks are table-tested against an oracle written here from the issue's
// words ("a changed definition is never called before acceptance"), not from src/pinning.

const CTX = { teamId: "T1", service: "vendor", at: 1_000 };
const seen = (tool: string, hash: string): ObservedTool => ({
  tool,
  hash,
  definition: `{"name":"${tool}","h":"${hash}"}`,
});

function pin(tool: string, status: PinStatus, pinnedHash: string | null, pendingHash: string | null = null): ToolPin {
  return {
    teamId: "T1",
    service: "vendor",
    tool,
    status,
    pinnedHash,
    pinnedDefinition: pinnedHash && `def ${pinnedHash}`,
    pendingHash,
    pendingDefinition: pendingHash && `def ${pendingHash}`,
    firstSeenAt: 1,
    changedAt: 1,
    decidedAt: null,
    decidedBy: null,
  };
}

describe("definitions", () => {
  it("the hash covers name, description, both schemas and annotations, not key order or other fields", () => {
    const a = definitionOf({
      name: "t",
      description: "d",
      inputSchema: { type: "object", properties: { x: { type: "string" } } },
      annotations: { readOnlyHint: true },
    });
    const reordered = definitionOf({
      annotations: { readOnlyHint: true },
      inputSchema: { properties: { x: { type: "string" } }, type: "object" },
      description: "d",
      name: "t",
    });
    expect(definitionHash(reordered)).toBe(definitionHash(a));
    expect(
      definitionHash(
        definitionOf({
          name: "t",
          description: "d",
          inputSchema: a.inputSchema,
          annotations: a.annotations,
          ...{ title: "ignored", _meta: { x: 1 } },
        }),
      ),
    ).toBe(definitionHash(a));
    for (const changed of [
      { ...a, description: "d " },
      { ...a, inputSchema: { type: "object" } },
      { ...a, outputSchema: { type: "object" } },
      { ...a, annotations: { readOnlyHint: false } },
      { ...a, name: "u" },
    ])
      expect(definitionHash(definitionOf(changed))).not.toBe(definitionHash(a));
  });

  it("the stored text is bounded and says it was cut", () => {
    const text = definitionText(definitionOf({ name: "t", description: "x".repeat(100_000) }));
    expect(text.length).toBeLessThan(MAX_DEFINITION_CHARS + 100);
    expect(text).toContain("cut:");
  });

  it("the diff shows removed and added lines and stays bounded", () => {
    const d = diffDefinitions(
      '{\n  "description": "old",\n  "name": "t"\n}',
      '{\n  "description": "new",\n  "name": "t"\n}',
    );
    expect(d).toEqual([
      { op: " ", text: "{" },
      { op: "-", text: '  "description": "old",' },
      { op: "+", text: '  "description": "new",' },
      { op: " ", text: '  "name": "t"' },
      { op: " ", text: "}" },
    ]);
    const big = Array.from({ length: 5_000 }, (_, i) => `line ${i}`).join("\n");
    const bounded = diffDefinitions(big, `${big}\nmore`);
    expect(bounded.length).toBeLessThanOrEqual(2 * MAX_DIFF_LINES + 1);
    expect(bounded.at(-1)?.text).toContain("not compared");
  });
});

describe("observe", () => {
  it("the first list pins every tool (trust on first use), with one audit row", () => {
    const w = observe([], [seen("a", "h1"), seen("b", "h2")], CTX);
    expect(w.writes.map((p) => [p.tool, p.status, p.pinnedHash, p.pendingHash])).toEqual([
      ["a", "pinned", "h1", null],
      ["b", "pinned", "h2", null],
    ]);
    expect(w.audit).toEqual([
      expect.objectContaining({
        event: "tool_pin",
        decision: "first_seen",
        tool: null,
        teamId: "T1",
        service: "vendor",
      }),
    ]);
  });

  it("each transition, tool by tool", () => {
    const cases: {
      name: string;
      before: ToolPin | undefined;
      served: string;
      after: [PinStatus, string | null, string | null] | "unchanged";
    }[] = [
      { name: "pinned, same", before: pin("t", "pinned", "h1"), served: "h1", after: "unchanged" },
      {
        name: "pinned, changed → quarantined",
        before: pin("t", "pinned", "h1"),
        served: "h2",
        after: ["quarantined", "h1", "h2"],
      },
      {
        name: "quarantined, same change",
        before: pin("t", "quarantined", "h1", "h2"),
        served: "h2",
        after: "unchanged",
      },
      // Sticky: serving the old definition again does not end a quarantine; only an admin does.
      {
        name: "quarantined, back to pinned stays quarantined",
        before: pin("t", "quarantined", "h1", "h2"),
        served: "h1",
        after: "unchanged",
      },
      {
        name: "quarantined, another change → latest pending",
        before: pin("t", "quarantined", "h1", "h2"),
        served: "h3",
        after: ["quarantined", "h1", "h3"],
      },
      { name: "unknown tool on a seen service → new", before: undefined, served: "h9", after: ["new", null, "h9"] },
      { name: "new, same", before: pin("t", "new", null, "h9"), served: "h9", after: "unchanged" },
      {
        name: "new, changed → new with latest",
        before: pin("t", "new", null, "h9"),
        served: "h8",
        after: ["new", null, "h8"],
      },
      {
        name: "rejected, still the rejected one",
        before: pin("t", "rejected", "h1", "h2"),
        served: "h2",
        after: "unchanged",
      },
      {
        name: "rejected, back to the pinned one → restored",
        before: pin("t", "rejected", "h1", "h2"),
        served: "h1",
        after: ["pinned", "h1", null],
      },
      {
        name: "rejected, a third one → quarantined",
        before: pin("t", "rejected", "h1", "h2"),
        served: "h3",
        after: ["quarantined", "h1", "h3"],
      },
      {
        name: "rejected new tool, changed → new again",
        before: pin("t", "rejected", null, "h2"),
        served: "h3",
        after: ["new", null, "h3"],
      },
    ];
    for (const c of cases) {
      const current = [pin("other", "pinned", "hx"), ...(c.before ? [c.before] : [])];
      const w = observe(current, [seen("t", c.served)], CTX);
      if (c.after === "unchanged") {
        expect(w.writes, c.name).toEqual([]);
        expect(w.audit, c.name).toEqual([]);
      } else {
        expect(
          w.writes.map((p) => [p.status, p.pinnedHash, p.pendingHash]),
          c.name,
        ).toEqual([c.after]);
        expect(w.audit, c.name).toHaveLength(1);
        expect(w.audit[0]?.argsHash, c.name).toBe(c.served);
      }
    }
  });
});

describe("decide", () => {
  const current = [
    pin("q", "quarantined", "h1", "h2"),
    pin("n", "new", null, "h9"),
    pin("p", "pinned", "h1"),
    pin("r", "rejected", "h1", "h2"),
  ];
  const run = (kind: "accept" | "reject", tool: string, expectedHash?: string) =>
    decide(current, { kind, tool, by: "cli:op", at: 5, ...(expectedHash ? { expectedHash } : {}) }, "T1", "vendor");

  it("accept pins the waiting definition; reject keeps the old pin and refuses the change", () => {
    expect(run("accept", "q").value).toMatchObject({
      kind: "done",
      pin: { status: "pinned", pinnedHash: "h2", pinnedDefinition: "def h2", pendingHash: null, decidedBy: "cli:op" },
    });
    expect(run("accept", "n").value).toMatchObject({ kind: "done", pin: { status: "pinned", pinnedHash: "h9" } });
    expect(run("accept", "r").value).toMatchObject({ kind: "done", pin: { status: "pinned", pinnedHash: "h2" } });
    expect(run("reject", "q").value).toMatchObject({
      kind: "done",
      pin: { status: "rejected", pinnedHash: "h1", pendingHash: "h2" },
    });
    expect(run("accept", "q").audit).toEqual([
      expect.objectContaining({ event: "tool_pin", decision: "accepted", tool: "q", argsHash: "h2", actor: "cli:op" }),
    ]);
  });

  it("refuses (and audits) what is not pending, unknown, or changed since the admin looked", () => {
    expect(run("accept", "p").value).toMatchObject({ kind: "refused", reason: "nothing_pending" });
    expect(run("reject", "r").value).toMatchObject({ kind: "refused", reason: "nothing_pending" });
    expect(run("accept", "zz").value).toMatchObject({ kind: "refused", reason: "not_found" });
    const stale = run("accept", "q", "h-reviewed-earlier");
    expect(stale.value).toMatchObject({ kind: "refused", reason: "hash_mismatch" });
    expect(stale.writes).toEqual([]);
    expect(stale.audit).toEqual([expect.objectContaining({ decision: "refused_hash_mismatch" })]);
    expect(run("accept", "q", "h2").value).toMatchObject({ kind: "done" });
  });
});

describe("the call checks", () => {
  it("gate: quarantined and rejected refused; new refused unless the service trusts new tools (then fail closed); pinned or never listed: the registry", () => {
    expect(gate(pin("t", "quarantined", "h1", "h2"))).toEqual({ kind: "refuse", status: "quarantined" });
    expect(gate(pin("t", "rejected", "h1", "h2"))).toEqual({ kind: "refuse", status: "rejected" });
    expect(gate(pin("t", "new", null, "h2"))).toEqual({ kind: "refuse", status: "new" });
    expect(gate(pin("t", "new", null, "h2"), { trustNewTools: false })).toEqual({ kind: "refuse", status: "new" });
    expect(gate(pin("t", "new", null, "h2"), { trustNewTools: true })).toEqual({ kind: "run", planned: "new" });
    expect(gate(pin("t", "quarantined", "h1", "h2"), { trustNewTools: true })).toEqual({
      kind: "refuse",
      status: "quarantined",
    });
    expect(gate(pin("t", "pinned", "h1"))).toEqual({ kind: "run", planned: "pinned" });
    expect(gate(undefined)).toEqual({ kind: "run", planned: "unseen" });
  });

  it("runVerdict against an oracle, over every combination", () => {
    const pins: Record<string, ToolPin | undefined> = {
      none: undefined,
      pinned_h1: pin("t", "pinned", "h1"),
      quarantined: pin("t", "quarantined", "h1", "h2"),
      rejected: pin("t", "rejected", "h1", "h2"),
      new_h2: pin("t", "new", null, "h2"),
    };
    const observations: Record<string, VendorObservation> = {
      unread: { kind: "unread" },
      serves_h1: { kind: "read", hashes: new Map([["t", "h1"]]) },
      serves_h2: { kind: "read", hashes: new Map([["t", "h2"]]) },
      lacks_t: { kind: "read", hashes: new Map([["other", "h1"]]) },
    };
    let n = 0;
    for (const [pn, p] of Object.entries(pins)) {
      for (const [on, observation] of Object.entries(observations)) {
        for (const planned of ["pinned", "new", "unseen"] as PlannedPin[]) {
          for (const [ownConnection, trustNewTools] of [
            [true, false],
            [false, false],
            [true, true],
            [false, true],
          ] as const) {
            const got = runVerdict({ planned, ownConnection, observation, pin: p, tool: "t", trustNewTools });
            // The oracle: the vendor's list must be known; a pin waiting for an admin never runs; a
            // definition served runs only as pinned; a new tool only where its class cannot matter
            // or the fail-closed class was applied; an unlisted tool has nothing to check.
            const served = observation.kind === "read" ? observation.hashes.get("t") : undefined;
            let want: string;
            if (observation.kind === "unread") want = "tool_unverified";
            else if (p?.status === "quarantined" || p?.status === "rejected") want = "tool_quarantined";
            else if (served !== undefined && p === undefined) want = "tool_unverified";
            else if (served !== undefined && p?.status === "pinned")
              want = served === p.pinnedHash ? "ok" : "tool_quarantined";
            else if (p?.status === "new" && !trustNewTools) want = "tool_unreviewed";
            else if (p?.status === "new") want = planned === "new" || ownConnection ? "ok" : "tool_changed";
            else want = "ok";
            expect(
              got.kind === "ok" ? "ok" : got.code,
              `${pn}/${on}/${planned}/${ownConnection}/${trustNewTools}`,
            ).toBe(want);
            n++;
          }
        }
      }
    }
    expect(n).toBe(5 * 4 * 3 * 4);
    // The property the whole feature exists for: a served definition other than the pinned one never runs.
    for (const planned of ["pinned", "new", "unseen"] as PlannedPin[]) {
      for (const ownConnection of [true, false]) {
        for (const trustNewTools of [true, false]) {
          expect(
            runVerdict({
              planned,
              ownConnection,
              observation: observations.serves_h2!,
              pin: pins.pinned_h1,
              tool: "t",
              trustNewTools,
            }).kind,
          ).toBe("refuse");
          // And an unreviewed new tool never runs unless the service trusts new tools.
          if (!trustNewTools)
            expect(
              runVerdict({
                planned,
                ownConnection,
                observation: observations.serves_h2!,
                pin: pins.new_h2,
                tool: "t",
                trustNewTools,
              }).kind,
            ).toBe("refuse");
        }
      }
    }
  });

  it("staleReading: the refusals a fresh reading of the vendor may clear (unread, a pinned tool served otherwise)", () => {
    const read = (h?: string): VendorObservation => ({ kind: "read", hashes: new Map(h ? [["t", h]] : []) });
    expect(staleReading({ observation: { kind: "unread" }, pin: undefined, tool: "t" })).toBe(true);
    expect(staleReading({ observation: read("h0"), pin: pin("t", "pinned", "h1"), tool: "t" })).toBe(true);
    expect(staleReading({ observation: read("h1"), pin: pin("t", "pinned", "h1"), tool: "t" })).toBe(false);
    expect(staleReading({ observation: read("h2"), pin: pin("t", "new", null, "h2"), tool: "t" })).toBe(false);
    // A quarantine or rejection stands whatever the vendor serves now: nothing to read again for.
    expect(staleReading({ observation: read("h2"), pin: pin("t", "quarantined", "h1", "h2"), tool: "t" })).toBe(false);
    expect(staleReading({ observation: read("h2"), pin: pin("t", "rejected", "h1", "h2"), tool: "t" })).toBe(false);
    expect(staleReading({ observation: read(), pin: undefined, tool: "t" })).toBe(false);
  });
});
