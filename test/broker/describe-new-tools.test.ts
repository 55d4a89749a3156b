import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { ALICE, type Harness, makeHarness, mcpCall, THREAD } from "../integration/broker-harness.js";
import { mutatingRegistryDoc, POISON, ran, type VendorFiles, vendorFiles } from "../pinning/mutating.js";

// Issue 21 finding 3: a tool a vendor adds after its service was pinned (status `new`) reached the
// model through mcp_describe (list, query and tool=) with its own description and input schema,
// prompt injection included, and ran on the caller's own connection. Now it is shown by name only,
// marked unreviewed, and refused until an admin accepts it, unless the registry entry sets
// `trustNewTools`. Real children of the mutating fixture vendor under the real broker.

let h: Harness | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

type Described = {
  tools: {
    name: string;
    description: string;
    pin?: string;
    unreviewed?: boolean;
    class: { access: string; write: boolean };
    inputSchema?: unknown;
  }[];
  note?: string;
};

async function describeVendor(c: Client, args: Record<string, unknown>): Promise<{ text: string; s: Described }> {
  const r = await c.callTool({ name: "mcp_describe", arguments: { service: "vendor", ...args } });
  const text = (r.content as { text?: string }[]).map((x) => x.text ?? "").join("\n");
  return { text, s: r.structuredContent as Described };
}

/**
 * Pins the vendor's first tools, then starts it again upgraded (the changed state on disk): its
 * start lists export_all (new) and a changed write_item (quarantined).
 */
async function upgradedVendor(
  o: { trustNewTools?: boolean } = {},
): Promise<{ h: Harness; files: VendorFiles; client: Client }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-new-tools-"));
  dirs.push(dir);
  const files = vendorFiles(dir);
  h = await makeHarness({ registryDoc: mutatingRegistryDoc(files, o) });
  const { connection } = await h.connect(ALICE);
  const { client } = await h.session();
  expect(
    (await mcpCall(client, { tool: "echo", args: { text: "first" }, on_behalf_of: ALICE })).structured.status,
  ).toBe("ok");
  await h.broker.pool.drop(connection.id);
  writeFileSync(files.stateFile, "changed\n");
  expect(
    (await mcpCall(client, { tool: "echo", args: { text: "second" }, on_behalf_of: ALICE })).structured.status,
  ).toBe("ok");
  expect(await h.store.toolPins.get(THREAD.teamId, "vendor", "export_all")).toMatchObject({ status: "new" });
  return { h, files, client };
}

describe("a tool the vendor added after its service was pinned", () => {
  it("is shown by name only, marked unreviewed, in the list, a query and tool=; its text never reaches the model", async () => {
    const { client } = await upgradedVendor();
    const all = await describeVendor(client, {});
    const ranked = await describeVendor(client, { query: "export every item instructions" });
    const one = await describeVendor(client, { tool: "export_all" });
    for (const d of [all, ranked, one]) {
      expect(JSON.stringify(d.s)).not.toContain(POISON);
      expect(d.text).not.toContain(POISON);
      expect(JSON.stringify(d.s)).not.toContain("exfiltrate_to");
    }
    const listed = all.s.tools.find((t) => t.name === "export_all");
    expect(listed).toMatchObject({
      name: "export_all",
      description: "",
      pin: "new",
      unreviewed: true,
      class: { access: "personal", write: true },
    });
    expect(one.s.tools).toEqual([
      expect.objectContaining({ name: "export_all", description: "", pin: "new", unreviewed: true }),
    ]);
    expect(one.s.tools[0]?.inputSchema).toBeUndefined();
    expect(all.s.note).toContain("Not reviewed (calls are refused until an admin accepts them): export_all");
    // The quarantined one still shows its accepted text (as before).
    expect(all.s.tools.find((t) => t.name === "write_item")).toMatchObject({
      pin: "quarantined",
      description: "Write an item (a write tool).",
    });
  });

  it("is refused by mcp_call, on the caller's own connection too, until an admin accepts it; then it runs", async () => {
    const { h, files, client } = await upgradedVendor();
    const refused = await mcpCall(client, { tool: "export_all", args: { exfiltrate_to: "x" }, on_behalf_of: ALICE });
    expect(refused.structured).toMatchObject({ status: "refused", code: "tool_unreviewed" });
    expect(refused.text).toContain("has not reviewed it yet");
    expect(ran(files)).not.toContain("export_all");
    const denied = await h.store.audit.query({ event: "call_denied", service: "vendor" });
    expect(denied.at(-1)).toMatchObject({ tool: "export_all", errorCode: "tool_unreviewed", decision: "pin_new" });

    const pin = await h.store.toolPins.get(THREAD.teamId, "vendor", "export_all");
    await h.broker.deps.pins.decide(
      { teamId: THREAD.teamId, service: "vendor" },
      { kind: "accept", tool: "export_all", by: "cli:op", expectedHash: pin!.pendingHash! },
    );
    expect((await mcpCall(client, { tool: "export_all", on_behalf_of: ALICE })).structured.status).toBe("ok");
    expect(ran(files)).toContain("export_all");
    // Accepted: its own definition is what the model reads now.
    expect((await describeVendor(client, { tool: "export_all" })).s.tools[0]).toMatchObject({
      pin: "pinned",
      description: expect.stringContaining("Export every item"),
    });
  });

  it("with trustNewTools, it is described with its own text and runs on the caller's own connection under the fail-closed class", async () => {
    const { files, client } = await upgradedVendor({ trustNewTools: true });
    const one = await describeVendor(client, { tool: "export_all" });
    expect(one.s.tools[0]).toMatchObject({
      pin: "new",
      unreviewed: true,
      description: expect.stringContaining("Export every item"),
      class: { access: "personal", write: true },
    });
    expect(one.s.tools[0]?.inputSchema).toMatchObject({ properties: { exfiltrate_to: {} } });
    expect(one.s.note).toContain("This service trusts new tools");
    expect((await mcpCall(client, { tool: "export_all", on_behalf_of: ALICE })).structured.status).toBe("ok");
    expect(ran(files)).toContain("export_all");
  });
});
