import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { TOOL_RELIST_INTERVAL_MS } from "../../src/broker/broker.js";
import { ALICE, BOB, type Harness, makeHarness, mcpCall, THREAD } from "../integration/broker-harness.js";
import { lists, mutatingRegistryDoc, POISON, ran, vendorFiles } from "./mutating.js";

// Issue 21 finding 4: a vendor that changes its tools while it runs. The broker compared vendors
// only with what they served at their start, so a busy child was never checked again: the changed
// tool kept running, and after an admin accepted, a child started before the change stayed refused.
// Real children (test/fixtures/mutating-vendor.ts) under the real broker; the vendor's own write
// log says what ran, its event log how often the broker read its tool list.

let h: Harness | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const scope = { teamId: THREAD.teamId, service: "vendor" };

/** A broker over the mutating vendor, Alice's connection to it and a session. */
async function start(o: { trustNewTools?: boolean } = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-live-"));
  dirs.push(dir);
  const files = vendorFiles(dir);
  h = await makeHarness({ registryDoc: mutatingRegistryDoc(files, o) });
  const { connection } = await h.connect(ALICE);
  const s = await h.session();
  return { h, files, connection, client: s.client, turn: s.turn };
}

describe("a vendor that changes its tools while it runs", () => {
  it("list_changed: the changed tool is quarantined before its next call; after accept the same child runs it again", async () => {
    const { h, files, connection, client } = await start();
    expect(
      (await mcpCall(client, { tool: "write_item", args: { id: "before", value: "v" }, on_behalf_of: ALICE }))
        .structured.status,
    ).toBe("ok");
    const pid = h.broker.pool.pidOf(connection.id);
    expect(pid).toBeDefined();

    // The vendor changes write_item (and adds export_all) and sends notifications/tools/list_changed.
    expect(
      (await mcpCall(client, { tool: "change_tools", args: { notify: true }, on_behalf_of: ALICE })).structured.status,
    ).toBe("ok");
    const refused = await mcpCall(client, {
      tool: "write_item",
      args: { id: "after-change", value: "v" },
      on_behalf_of: ALICE,
    });
    expect(refused.structured).toMatchObject({ status: "refused", code: "tool_quarantined" });
    const pin = await h.store.toolPins.get(THREAD.teamId, "vendor", "write_item");
    expect(pin).toMatchObject({ status: "quarantined" });
    expect(pin?.pendingDefinition).toContain(POISON);
    // Every other call on every child of the service decides on the pin as it is now.
    expect(
      (await mcpCall(client, { tool: "write_item", args: { id: "again", value: "v" }, on_behalf_of: ALICE })).structured
        .code,
    ).toBe("tool_quarantined");
    expect(ran(files)).toEqual(["write_item:before"]);
    // Still the same child: nothing was restarted to find the change.
    expect(h.broker.pool.pidOf(connection.id)).toBe(pid);

    // An admin accepts the reviewed definition: the child started before the change runs it.
    expect(
      await h.broker.deps.pins.decide(scope, {
        kind: "accept",
        tool: "write_item",
        by: "cli:op",
        expectedHash: pin!.pendingHash!,
      }),
    ).toMatchObject({ kind: "done" });
    expect(
      (await mcpCall(client, { tool: "write_item", args: { id: "after-accept", value: "v" }, on_behalf_of: ALICE }))
        .structured.status,
    ).toBe("ok");
    expect(h.broker.pool.pidOf(connection.id)).toBe(pid);
    expect(ran(files)).toEqual(["write_item:before", "write_item:after-accept"]);
    const decisions = (await h.store.audit.query({ event: "tool_pin" })).map((r) => [r.tool, r.decision]);
    expect(decisions).toEqual(
      expect.arrayContaining([
        ["write_item", "quarantined"],
        ["export_all", "new"],
        ["write_item", "accepted"],
      ]),
    );
  });

  it("list_changed alone, with no call: the broker reads the list again (once the gap since its last read has passed)", async () => {
    const { h, client } = await start();
    expect((await mcpCall(client, { tool: "echo", args: { text: "hi" }, on_behalf_of: ALICE })).structured.status).toBe(
      "ok",
    );
    expect(
      (await mcpCall(client, { tool: "change_tools", args: { notify: true }, on_behalf_of: ALICE })).structured.status,
    ).toBe("ok");
    // The notification's read is due one gap (1 s on the injected clock) after the last read.
    await h.clock.advanceAsync(1_000);
    await vi.waitFor(
      async () =>
        expect((await h.store.toolPins.get(THREAD.teamId, "vendor", "write_item"))?.status).toBe("quarantined"),
      { timeout: 15_000, interval: 50 },
    );
  });

  it("a vendor that never says so is read again on the periodic re-list, once per interval, and its change quarantined", async () => {
    const { h, files, client } = await start();
    expect(
      (await mcpCall(client, { tool: "write_item", args: { id: "before", value: "v" }, on_behalf_of: ALICE }))
        .structured.status,
    ).toBe("ok");
    expect(
      (await mcpCall(client, { tool: "change_tools", args: { notify: false }, on_behalf_of: ALICE })).structured.status,
    ).toBe("ok");
    const before = lists(files);
    expect((await h.store.toolPins.get(THREAD.teamId, "vendor", "write_item"))?.status).toBe("pinned");

    await h.clock.advanceAsync(TOOL_RELIST_INTERVAL_MS);
    await vi.waitFor(
      async () =>
        expect((await h.store.toolPins.get(THREAD.teamId, "vendor", "write_item"))?.status).toBe("quarantined"),
      { timeout: 15_000, interval: 50 },
    );
    // One interval, one child: one read.
    expect(lists(files)).toBe(before + 1);
    expect(
      (await mcpCall(client, { tool: "write_item", args: { id: "after-change", value: "v" }, on_behalf_of: ALICE }))
        .structured.code,
    ).toBe("tool_quarantined");
    expect((await mcpCall(client, { tool: "export_all", on_behalf_of: ALICE })).structured.code).toBe(
      "tool_unreviewed",
    );
    expect(ran(files)).toEqual(["write_item:before"]);
  });

  it("a vendor whose re-read goes over the tool-list limits is stopped, as at its start; the next call starts a fresh one", async () => {
    const { h, files, connection, client } = await start();
    expect((await mcpCall(client, { tool: "echo", args: { text: "hi" }, on_behalf_of: ALICE })).structured.status).toBe(
      "ok",
    );
    const pid = h.broker.pool.pidOf(connection.id);
    // From now on every tools/list names another page: the bounded reader stops at its page limit.
    expect(
      (await mcpCall(client, { tool: "change_tools", args: { notify: true, page_forever: true }, on_behalf_of: ALICE }))
        .structured.status,
    ).toBe("ok");
    const refused = await mcpCall(client, {
      tool: "write_item",
      args: { id: "during-bomb", value: "v" },
      on_behalf_of: ALICE,
    });
    expect(refused.structured).toMatchObject({ status: "refused", code: "tool_unverified" });
    expect(h.broker.pool.pidOf(connection.id)).not.toBe(pid);
    expect(h.log.lines.some((l) => l.includes("went over the limits on a re-read"))).toBe(true);
    expect(ran(files)).toEqual([]);
    // A fresh child (it starts changed: write_item quarantined, echo still pinned).
    expect(
      (await mcpCall(client, { tool: "echo", args: { text: "again" }, on_behalf_of: ALICE })).structured.status,
    ).toBe("ok");
    expect(h.broker.pool.pidOf(connection.id)).not.toBe(pid);
    expect((await h.store.toolPins.get(THREAD.teamId, "vendor", "write_item"))?.status).toBe("quarantined");
  });

  it("after an accept, a child started before the change that never said so runs the accepted tool (its reading is taken again, not its start's)", async () => {
    const { h, files, connection, client, turn } = await start();
    expect(
      (await mcpCall(client, { tool: "write_item", args: { id: "alice-before", value: "v" }, on_behalf_of: ALICE }))
        .structured.status,
    ).toBe("ok");
    const alicePid = h.broker.pool.pidOf(connection.id);
    // Alice's child changes silently; Bob's own child, started after the change, reveals it.
    expect(
      (await mcpCall(client, { tool: "change_tools", args: { notify: false }, on_behalf_of: ALICE })).structured.status,
    ).toBe("ok");
    const bob = await h.connect(BOB);
    turn.user = BOB;
    expect(
      (await mcpCall(client, { tool: "write_item", args: { id: "bob-changed", value: "v" }, on_behalf_of: BOB }))
        .structured.code,
    ).toBe("tool_quarantined");
    const pin = await h.store.toolPins.get(THREAD.teamId, "vendor", "write_item");
    expect(pin).toMatchObject({ status: "quarantined" });
    await h.broker.deps.pins.decide(scope, {
      kind: "accept",
      tool: "write_item",
      by: "cli:op",
      expectedHash: pin!.pendingHash!,
    });

    // Alice's child, read last at its start (before the change), serves the accepted definition now.
    turn.user = ALICE;
    expect(
      (
        await mcpCall(client, {
          tool: "write_item",
          args: { id: "alice-after-accept", value: "v" },
          on_behalf_of: ALICE,
        })
      ).structured.status,
    ).toBe("ok");
    expect(h.broker.pool.pidOf(connection.id)).toBe(alicePid);
    turn.user = BOB;
    expect(
      (await mcpCall(client, { tool: "write_item", args: { id: "bob-after-accept", value: "v" }, on_behalf_of: BOB }))
        .structured.status,
    ).toBe("ok");
    expect(h.broker.pool.has(bob.connection.id)).toBe(true);
    expect(ran(files)).toEqual([
      "write_item:alice-before",
      "write_item:alice-after-accept",
      "write_item:bob-after-accept",
    ]);
  });
});
