import { describe, expect, it } from "vitest";
import { decide, observe } from "../../../src/pinning/policy.js";
import type { ToolPin } from "../../../src/store/records.js";
import { backends } from "./backends.js";

// The pin port on both adapters (SQLite migration 0007, PostgreSQL postgres/0004): one transaction
// per update with its audit rows, per-team keys, the admin listing, and the table's own checks.

const BACKENDS = backends();

const seen = (tool: string, hash: string) => ({ tool, hash, definition: `{"name":"${tool}"}` });

describe.each(BACKENDS)("tool pins repository on $name", (be) => {
  it("writes an observation and its audit rows together, per team", async () => {
    const { store } = await be.harness();
    await store.toolPins.update("T1", "svc", (cur) =>
      observe(cur, [seen("a", "h1"), seen("b", "h2")], { teamId: "T1", service: "svc", at: 10 }),
    );
    await store.toolPins.update("T1", "svc", (cur) =>
      observe(cur, [seen("a", "h1x"), seen("c", "h3")], { teamId: "T1", service: "svc", at: 20 }),
    );
    expect((await store.toolPins.list("T1", "svc")).map((p) => [p.tool, p.status])).toEqual([
      ["a", "quarantined"],
      ["b", "pinned"],
      ["c", "new"],
    ]);
    // Another team's first sight is its own: T1's quarantine does not reach it.
    await store.toolPins.update("T2", "svc", (cur) =>
      observe(cur, [seen("a", "h1x")], { teamId: "T2", service: "svc", at: 30 }),
    );
    expect(await store.toolPins.get("T2", "svc", "a")).toMatchObject({ status: "pinned", pinnedHash: "h1x" });
    expect((await store.toolPins.undecided({ limit: 10 })).map((p) => [p.teamId, p.tool, p.status])).toEqual([
      ["T1", "a", "quarantined"],
      ["T1", "c", "new"],
    ]);
    expect(await store.toolPins.undecided({ teamId: "T2", limit: 10 })).toEqual([]);
    expect(await store.toolPins.undecided({ tool: "c", limit: 10 })).toHaveLength(1);
    expect((await store.audit.query({ event: "tool_pin" })).map((r) => [r.teamId, r.tool, r.decision])).toEqual([
      ["T1", null, "first_seen"],
      ["T1", "a", "quarantined"],
      ["T1", "c", "new"],
      ["T2", null, "first_seen"],
    ]);
  });

  it("a decision is applied and read back; a write the table's checks refuse leaves nothing, audit included", async () => {
    const { store } = await be.harness();
    await store.toolPins.update("T1", "svc", (cur) =>
      observe(cur, [seen("a", "h1")], { teamId: "T1", service: "svc", at: 10 }),
    );
    await store.toolPins.update("T1", "svc", (cur) =>
      observe(cur, [seen("a", "h2")], { teamId: "T1", service: "svc", at: 20 }),
    );
    const r = await store.toolPins.update("T1", "svc", (cur) =>
      decide(cur, { kind: "accept", tool: "a", by: "cli:op", at: 30 }, "T1", "svc"),
    );
    expect(r).toMatchObject({ kind: "done" });
    expect(await store.toolPins.get("T1", "svc", "a")).toMatchObject({
      status: "pinned",
      pinnedHash: "h2",
      pendingHash: null,
      decidedBy: "cli:op",
      decidedAt: 30,
    });
    const before = await store.audit.count();
    const broken = (cur: readonly ToolPin[]) => ({
      writes: [{ ...cur[0]!, status: "pinned" as const, pendingHash: "h3" }],
      audit: [{ at: 40, event: "tool_pin" as const, decision: "bogus" }],
      value: null,
    });
    await expect(store.toolPins.update("T1", "svc", broken)).rejects.toThrow(be.errors.check);
    const outside = (cur: readonly ToolPin[]) => ({ writes: [{ ...cur[0]!, teamId: "T2" }], audit: [], value: null });
    await expect(store.toolPins.update("T1", "svc", outside)).rejects.toThrow(/outside its team/);
    expect(await store.audit.count()).toBe(before);
    expect(await store.toolPins.get("T1", "svc", "a")).toMatchObject({ status: "pinned", pinnedHash: "h2" });
    expect(await store.toolPins.get("T2", "svc", "a")).toBeUndefined();
  });
});
