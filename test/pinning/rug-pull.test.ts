import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { runInProcess } from "../cli/run.js";
import { ALICE, BOB, fixtureRegistryDoc, mcpCall, THREAD } from "../integration/broker-harness.js";
import { testAppConfig } from "../support/app-config.js";

// Issue 15 part 3, end to end: the real app (SQLite, vault, pool, the fixture vendor as real
// children) behind /mcp, started twice on one database. Between the two starts the vendor changes
// write_item's definition (VENDOR_DEFINITIONS=changed) and adds export_all. The changed tool must
// never reach the vendor before an operator accepts it: the vendor's own write log proves it.

const HOST_TOKEN = `host-${randomBytes(8).toString("hex")}`;
const KEY = randomBytes(32).toString("base64");
const THREAD_HEADER = `${THREAD.teamId}/${THREAD.channelId}/${THREAD.threadTs}`;
const POISON = "Before any other tool";

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f().catch(() => {});
});

/** The fixture registry, with export_all classified borrowable (so its fail-closed treatment shows). */
function registry(writeLog: string, definitions: "original" | "changed") {
  const doc = fixtureRegistryDoc({
    VENDOR_WRITE_LOG: writeLog,
    ...(definitions === "changed" ? { VENDOR_DEFINITIONS: "changed" } : {}),
  }) as { services: { vendor: { tools: Record<string, string[]> } } };
  doc.services.vendor.tools.export_all = ["borrowable", "read"];
  return parseRegistry(doc, "pinning-test");
}

async function boot(dir: string, writeLog: string, definitions: "original" | "changed"): Promise<RunningApp> {
  const config = testAppConfig(dir, HOST_TOKEN, { SLAUDE_ENCRYPTION_KEY: KEY });
  const app = await startApp({
    config,
    log: memoryLogger("debug"),
    membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE, BOB),
    registry: registry(writeLog, definitions),
  });
  cleanup.push(() => app.close());
  return app;
}

async function client(app: RunningApp): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${HOST_TOKEN}`, "X-Slaude-Thread": THREAD_HEADER } },
  });
  const c = new Client({ name: "pinning-test", version: "1" });
  await c.connect(transport);
  cleanup.push(() => c.close());
  return c;
}

async function turn(app: RunningApp, user: string): Promise<void> {
  const r = await fetch(`${app.url}/v1/turns`, {
    method: "POST",
    headers: { authorization: `Bearer ${HOST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      team_id: THREAD.teamId,
      channel_id: THREAD.channelId,
      thread_ts: THREAD.threadTs,
      user_id: user,
    }),
  });
  expect(r.status).toBe(204);
}

const writes = (log: string): { id: string }[] =>
  existsSync(log)
    ? readFileSync(log, "utf8")
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { id: string })
    : [];

async function describeTool(c: Client, tool: string) {
  const r = await c.callTool({ name: "mcp_describe", arguments: { service: "vendor", tool } });
  return r.structuredContent as {
    tools: {
      name: string;
      description: string;
      pin?: string;
      unreviewed?: boolean;
      class: { access: string; write: boolean };
      inputSchema?: { properties?: Record<string, unknown> };
    }[];
    note?: string;
  };
}

describe("tool pinning through /mcp, across two starts of a changing vendor", () => {
  it("a changed definition is never called before acceptance; after `registry accept` it runs", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-pinning-"));
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
    const writeLog = path.join(dir, "writes.jsonl");
    const cliEnv = {
      NODE_ENV: "test",
      SLAUDE_DATA_DIR: dir,
      SLAUDE_ENCRYPTION_KEY: KEY,
      SLAUDE_HOST_TOKENS: HOST_TOKEN,
      USER: "op",
    };

    // First start: the original definitions are pinned on first sight, and write_item runs.
    const first = await boot(dir, writeLog, "original");
    const alice = await first.lifecycle.create({
      teamId: THREAD.teamId,
      ownerUserId: ALICE,
      service: "vendor",
      scope: "thread",
      channelId: THREAD.channelId,
      threadTs: THREAD.threadTs,
      credential: { kind: "fields", fields: { token: `canary-${randomBytes(8).toString("hex")}`, user: ALICE } },
      createdBy: ALICE,
    });
    // Bob holds a thread grant on Alice's connection: it must not cover a quarantined tool.
    await first.store.grants.create(
      {
        id: "grant-bob",
        connectionId: alice.id,
        teamId: THREAD.teamId,
        channelId: THREAD.channelId,
        threadTs: THREAD.threadTs,
        ownerUserId: ALICE,
        borrowerUserId: BOB,
        service: "vendor",
        createdAt: Date.now(),
      },
      [],
    );
    const c1 = await client(first);
    await turn(first, ALICE);
    expect(
      (await mcpCall(c1, { tool: "write_item", args: { id: "before", value: "v" }, on_behalf_of: ALICE })).structured
        .status,
    ).toBe("ok");
    expect(writes(writeLog).map((w) => w.id)).toEqual(["before"]);
    expect((await first.store.toolPins.get(THREAD.teamId, "vendor", "write_item"))?.status).toBe("pinned");
    await first.close();

    // Second start: the vendor now serves a changed write_item and a new export_all.
    const second = await boot(dir, writeLog, "changed");
    const c2 = await client(second);
    await turn(second, ALICE);
    // echo is unchanged: it runs, and starting the vendor records (and quarantines) the change.
    expect((await mcpCall(c2, { tool: "echo", args: { text: "hi" }, on_behalf_of: ALICE })).structured.status).toBe(
      "ok",
    );
    const quarantined = await second.store.toolPins.get(THREAD.teamId, "vendor", "write_item");
    expect(quarantined).toMatchObject({ status: "quarantined" });
    expect(quarantined?.pendingDefinition).toContain(POISON);

    const refused = await mcpCall(c2, {
      tool: "write_item",
      args: { id: "own-after-change", value: "v" },
      on_behalf_of: ALICE,
    });
    expect(refused.structured).toMatchObject({ status: "refused", code: "tool_quarantined" });
    expect(refused.text).toContain("quarantined");
    // Bob, under his thread grant: refused before any approval is asked.
    await turn(second, BOB);
    const borrowed = await mcpCall(c2, {
      tool: "write_item",
      args: { id: "grant-after-change", value: "v" },
      on_behalf_of: BOB,
    });
    expect(borrowed.structured).toMatchObject({ status: "refused", code: "tool_quarantined" });
    expect(await second.store.approvals.list({ teamId: THREAD.teamId, limit: 10 })).toEqual([]);
    // The new tool is refused until an admin reviews it: the registry says borrowable, Bob's grant does not reach it.
    expect((await mcpCall(c2, { tool: "export_all", on_behalf_of: BOB })).structured).toMatchObject({
      status: "refused",
      code: "tool_unreviewed",
    });

    // mcp_describe shows the change and the accepted definition, never the changed text.
    await turn(second, ALICE);
    const described = await describeTool(c2, "write_item");
    expect(described.tools[0]).toMatchObject({
      name: "write_item",
      pin: "quarantined",
      description: "Write an item (a write tool).",
    });
    expect(Object.keys(described.tools[0]?.inputSchema?.properties ?? {})).not.toContain("cc");
    expect(described.note).toContain("Quarantined");
    expect(JSON.stringify(described)).not.toContain(POISON);
    expect((await describeTool(c2, "export_all")).tools[0]).toMatchObject({
      pin: "new",
      unreviewed: true,
      description: "",
      class: { access: "personal", write: true },
    });

    // The security property: the vendor never received a call to the changed tool.
    expect(writes(writeLog).map((w) => w.id)).toEqual(["before"]);

    // The operator reviews the diff and accepts; a stale hash is refused first.
    const listed = await runInProcess(["registry", "changes", "--diff"], cliEnv);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/vendor\s+write_item\s+quarantined/);
    expect(listed.stdout).toMatch(/vendor\s+export_all\s+new/);
    expect(listed.stdout).toContain(`-   "description": "Write an item (a write tool).",`);
    expect(listed.stdout).toContain(`+   "description": "Write an item. ${POISON}`);
    const stale = await runInProcess(["registry", "accept", "vendor", "write_item", "--hash", "0".repeat(64)], cliEnv);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain("changed since you reviewed it");
    expect(
      (await mcpCall(c2, { tool: "write_item", args: { id: "after-stale", value: "v" }, on_behalf_of: ALICE }))
        .structured.code,
    ).toBe("tool_quarantined");
    const accepted = await runInProcess(
      ["registry", "accept", "vendor", "write_item", "--hash", quarantined!.pendingHash!],
      cliEnv,
    );
    expect(accepted.code, accepted.stderr).toBe(0);

    const ran = await mcpCall(c2, {
      tool: "write_item",
      args: { id: "after-accept", value: "v" },
      on_behalf_of: ALICE,
    });
    expect(ran.structured.status).toBe("ok");
    expect(writes(writeLog).map((w) => w.id)).toEqual(["before", "after-accept"]);
    const decisions = (await second.store.audit.query({ event: "tool_pin" })).map((r) => [r.tool, r.decision, r.actor]);
    expect(decisions).toEqual(
      expect.arrayContaining([
        [null, "first_seen", "vendor"],
        ["write_item", "quarantined", "vendor"],
        ["export_all", "new", "vendor"],
        ["write_item", "refused_hash_mismatch", "cli:op"],
        ["write_item", "accepted", "cli:op"],
      ]),
    );
  });

  it("the very first call after the change, which starts the changed vendor itself, is refused on that vendor before its tool runs", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-pinning-"));
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
    const writeLog = path.join(dir, "writes.jsonl");
    const first = await boot(dir, writeLog, "original");
    await first.lifecycle.create({
      teamId: THREAD.teamId,
      ownerUserId: ALICE,
      service: "vendor",
      scope: "thread",
      channelId: THREAD.channelId,
      threadTs: THREAD.threadTs,
      credential: { kind: "fields", fields: { token: `canary-${randomBytes(8).toString("hex")}`, user: ALICE } },
      createdBy: ALICE,
    });
    await turn(first, ALICE);
    expect(
      (await mcpCall(await client(first), { tool: "echo", args: { text: "pin me" }, on_behalf_of: ALICE })).structured
        .status,
    ).toBe("ok");
    await first.close();

    const second = await boot(dir, writeLog, "changed");
    await turn(second, ALICE);
    // When this call is planned the pin still says "pinned": only the vendor it starts reveals the change.
    const c = await client(second);
    const refused = await mcpCall(c, {
      tool: "write_item",
      args: { id: "first-after-change", value: "v" },
      on_behalf_of: ALICE,
    });
    expect(refused.structured).toMatchObject({ status: "refused", code: "tool_quarantined" });
    expect(writes(writeLog)).toEqual([]);
    // Its write-ahead row was written, and its completion names the refusal.
    const rows = await second.store.audit.query({ event: "call", service: "vendor" });
    expect(rows.at(-1)).toMatchObject({ tool: "write_item", errorCode: "tool_quarantined" });
    expect(
      (await mcpCall(c, { tool: "write_item", args: { id: "second-after-change", value: "v" }, on_behalf_of: ALICE }))
        .structured.code,
    ).toBe("tool_quarantined");
    expect(writes(writeLog)).toEqual([]);
  });
});
