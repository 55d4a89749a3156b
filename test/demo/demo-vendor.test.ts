import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEMO_VENDOR_SCRIPT, demoRegistry, demoRegistryDoc } from "../../src/config/demo-registry.js";
import { ALICE, BOB, type Harness, makeHarness, mcpCall } from "../integration/broker-harness.js";

// The demo vendor (examples/demo-vendor/server.js) as the broker runs it: a real child process per
// connection started from the demo registry, reached through a real MCP client, the real policy and
// the real vault. Tokens name their owner; whoami must say whose account ran, never the token.

const ALICE_TOKEN = "demo-alice-a1b2c3d4e5";
const BOB_TOKEN = "demo-bob-f6g7h8i9j0";

let h: Harness;
beforeEach(async () => {
  h = await makeHarness({ registryDoc: demoRegistryDoc() });
});
afterEach(async () => {
  await h.close();
});

function result(text: string): Record<string, unknown> {
  // The broker's first line is its own header; the vendor's JSON answer follows.
  const lines = text.split("\n").filter((l) => l.trim().startsWith("{"));
  return JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>;
}

async function call(
  s: { client: Client; turn: { user: string } },
  user: string,
  tool: string,
  args: Record<string, unknown> = {},
) {
  s.turn.user = user;
  return mcpCall(s.client, { service: "demo", tool, args, on_behalf_of: user });
}

describe("demo vendor through the broker", () => {
  it("whoami names the token's owner and never echoes the token", async () => {
    await h.connect(ALICE, { service: "demo", token: ALICE_TOKEN });
    const s = await h.session();
    const r = await call(s, ALICE, "whoami");
    expect(r.isError, r.text).toBe(false);
    expect(r.structured.ranAs).toBe("own");
    expect(result(r.text)).toMatchObject({ account: "alice" });
    expect(JSON.stringify(r.raw)).not.toContain("a1b2c3d4e5");
  });

  it("keeps notes per token: Bob's own account never sees Alice's notes", async () => {
    await h.connect(ALICE, { service: "demo", token: ALICE_TOKEN });
    await h.connect(BOB, { service: "demo", token: BOB_TOKEN });
    const s = await h.session();
    const added = await call(s, ALICE, "add_note", { title: "alice's plan", body: "ship it" });
    expect(added.isError, added.text).toBe(false);
    const id = (result(added.text).added as { id: string }).id;

    const mine = await call(s, ALICE, "list_notes");
    expect(result(mine.text)).toEqual({ account: "alice", notes: [{ id, title: "alice's plan" }] });
    const got = await call(s, ALICE, "get_note", { id });
    expect(result(got.text)).toMatchObject({ account: "alice", note: { id, body: "ship it" } });

    const bobs = await call(s, BOB, "list_notes");
    expect(bobs.structured.ranAs).toBe("own");
    expect(result(bobs.text)).toEqual({ account: "bob", notes: [] });
    const bobGet = await call(s, BOB, "get_note", { id });
    expect(bobGet.text).toContain(`no note ${id}`);
    expect(h.approvals.asked).toHaveLength(0);
  });

  it("runs each tool with the class the registry gives it: reads borrow under a grant, add_note asks every time, delete_note never borrows", async () => {
    await h.connect(ALICE, { service: "demo", token: ALICE_TOKEN });
    const s = await h.session();
    await call(s, ALICE, "add_note", { title: "shared list" });

    // A read: the owner is asked once; Allow for thread lets Bob's next reads run on Alice's account.
    const pending = call(s, BOB, "list_notes");
    const first = await h.approvals.nextCard(0);
    expect(first.card.tool).toBe("list_notes");
    expect(first.card.decisions).toEqual(["allowed_thread", "allowed_once", "denied"]);
    expect(await h.approvalService.decide(first.approval.id, first.approval.nonce, ALICE, "allowed_thread")).toBe(
      "applied",
    );
    const borrowed = await pending;
    expect(borrowed.structured.ranAs).toBe("approval_thread");
    expect(result(borrowed.text)).toMatchObject({ account: "alice", notes: [{ title: "shared list" }] });
    const again = await call(s, BOB, "whoami");
    expect(again.structured.ranAs).toBe("grant");
    expect(result(again.text)).toMatchObject({ account: "alice" });
    expect(h.approvals.asked).toHaveLength(1);

    // A write: asked again under the grant, and the card offers Just once or Deny only.
    const write = call(s, BOB, "add_note", { title: "from bob" });
    const second = await h.approvals.nextCard(1);
    expect(second.card).toMatchObject({
      tool: "add_note",
      write: true,
      reason: "write_under_grant",
      decisions: ["allowed_once", "denied"],
    });
    expect(await h.approvalService.decide(second.approval.id, second.approval.nonce, ALICE, "allowed_once")).toBe(
      "applied",
    );
    const wrote = await write;
    expect(wrote.isError, wrote.text).toBe(false);
    expect(result(wrote.text)).toMatchObject({ account: "alice", added: { title: "from bob" } });

    // A personal write: never on someone else's account, whatever the grant.
    const del = await call(s, BOB, "delete_note", { id: "n-anything" });
    expect(del.structured.code).toBe("owner_only");
    expect(h.approvals.asked).toHaveLength(2);
  });
});

describe("demo vendor's own declarations", () => {
  let home: string;
  beforeEach(() => {
    home = mkdtempSync(path.join(os.tmpdir(), "demo-vendor-"));
  });
  afterEach(() => {
    rmSync(home, { recursive: true, force: true });
  });

  it("annotates every tool honestly: read-only exactly where the registry says read, destructive only for delete", async () => {
    const client = new Client({ name: "t", version: "1" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [DEMO_VENDOR_SCRIPT],
        env: { HOME: home, DEMO_VENDOR_TOKEN: ALICE_TOKEN },
      }),
    );
    try {
      const { tools } = await client.listTools();
      const service = demoRegistry().get("demo")!;
      expect(tools.map((t) => t.name).sort()).toEqual(["add_note", "delete_note", "get_note", "list_notes", "whoami"]);
      for (const t of tools) {
        expect(service.isClassified(t.name), t.name).toBe(true);
        const cls = service.classOf(t.name);
        expect(t.annotations?.readOnlyHint, t.name).toBe(!cls.write);
        expect(t.annotations?.destructiveHint ?? false, t.name).toBe(t.name === "delete_note");
        expect(t.inputSchema.additionalProperties, t.name).toBe(false);
      }
      expect(service.classOf("delete_note")).toEqual({ access: "personal", write: true });
      expect(service.classOf("add_note")).toEqual({ access: "borrowable", write: true });
    } finally {
      await client.close();
    }
  });

  it("refuses to start without a well-formed token, and does not echo what it was given", async () => {
    const client = new Client({ name: "t", version: "1" });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [DEMO_VENDOR_SCRIPT],
      env: { HOME: home, DEMO_VENDOR_TOKEN: "not-a-demo-secret-xyz" },
      stderr: "pipe",
    });
    let stderr = "";
    transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    await expect(client.connect(transport)).rejects.toThrow();
    expect(stderr).toContain("DEMO_VENDOR_TOKEN");
    expect(stderr).not.toContain("not-a-demo-secret-xyz");
  });
});
