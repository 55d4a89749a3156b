// The five tools as a model sees them over /mcp: a model must be able to use them from their
// descriptions and schemas alone. Real app, real SDK client over Streamable HTTP.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { ALICE, BOB, fixtureRegistryDoc, THREAD } from "../integration/broker-harness.js";
import { testAppConfig } from "../support/app-config.js";

const TOKEN = `host-${randomBytes(8).toString("hex")}`;
let dir: string;
let app: RunningApp;
let client: Client;

/** The fixture registry with a second service, so listing services shows more than one. */
function registryDoc(): unknown {
  const doc = fixtureRegistryDoc() as { services: Record<string, Record<string, unknown>> };
  const vendor = doc.services.vendor ?? {};
  return {
    services: {
      vendor: { ...vendor, displayName: "Fixture vendor", description: "Items for tests." },
      notes: { ...vendor, description: "Notes." },
    },
  };
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-surface-"));
  const config = testAppConfig(dir, TOKEN);
  app = await startApp({
    config,
    log: memoryLogger("warn"),
    membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE, BOB),
    registry: parseRegistry(registryDoc(), "x"),
  });
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
    requestInit: {
      headers: {
        Authorization: `Bearer ${TOKEN}`,
        "X-Slaude-Thread": `${THREAD.teamId}/${THREAD.channelId}/${THREAD.threadTs}`,
      },
    },
  });
  client = new Client({ name: "surface-test", version: "1" });
  await client.connect(transport);
  const turn = await fetch(`${app.url}/v1/turns`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      team_id: THREAD.teamId,
      channel_id: THREAD.channelId,
      thread_ts: THREAD.threadTs,
      user_id: ALICE,
    }),
  });
  expect(turn.status).toBe(204);
});

afterAll(async () => {
  await client?.close().catch(() => {});
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

type JsonSchema = {
  type?: string;
  properties?: Record<string, JsonSchema & { description?: string }>;
  anyOf?: unknown[];
  required?: string[];
};

describe("the tool surface a model sees", () => {
  it("initialize says the tool list never changes and names the services in the instructions", () => {
    expect(client.getServerCapabilities()?.tools?.listChanged).toBe(false);
    const instructions = client.getInstructions() ?? "";
    expect(instructions).toContain("vendor (Fixture vendor)");
    expect(instructions).toContain("notes");
    expect(instructions).toContain("on_behalf_of");
    expect(instructions).not.toMatch(/Jira|GitHub|Notion/);
  });

  it("every tool has a title, a description, annotations, a described parameter for every input and an object output schema", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      "connect",
      "connections_list",
      "connections_revoke",
      "mcp_call",
      "mcp_describe",
    ]);
    for (const t of tools) {
      expect(t.title, t.name).toBeTruthy();
      expect((t.description ?? "").length, t.name).toBeGreaterThan(40);
      expect(typeof t.annotations?.readOnlyHint, t.name).toBe("boolean");
      expect(typeof t.annotations?.openWorldHint, t.name).toBe("boolean");
      const input = t.inputSchema as JsonSchema;
      for (const [param, schema] of Object.entries(input.properties ?? {}))
        expect(schema.description, `${t.name}.${param}`).toBeTruthy();
      const output = t.outputSchema as JsonSchema | undefined;
      expect(output?.type, t.name).toBe("object");
      expect(output?.properties?.status, t.name).toBeDefined();
    }
    const revoke = tools.find((t) => t.name === "connections_revoke")?.inputSchema as JsonSchema;
    expect(revoke.anyOf).toEqual([{ required: ["service"] }, { required: ["connection_id"] }]);
  });

  it("mcp_describe with no arguments lists the services; its answer matches the output schema (the client validates it)", async () => {
    const r = await client.callTool({ name: "mcp_describe", arguments: {} });
    expect(r.isError).toBeFalsy();
    const services = (
      r.structuredContent as {
        services: { name: string; displayName: string; description: string; loginStrategy: string }[];
      }
    ).services;
    expect(services.map((s) => s.name).sort()).toEqual(["notes", "vendor"]);
    expect(services.find((s) => s.name === "vendor")).toEqual({
      name: "vendor",
      displayName: "Fixture vendor",
      description: "Items for tests.",
      loginStrategy: "paste",
    });
  });

  it('query matches word forms: "items" finds read_item and write_item', async () => {
    const r = await client.callTool({ name: "mcp_describe", arguments: { service: "vendor", query: "items" } });
    const names = (r.structuredContent as { tools: { name: string }[] }).tools.map((t) => t.name);
    expect(names.slice(0, 2).sort()).toEqual(["read_item", "write_item"]);
  });

  it("answers of the other tools validate against their output schemas", async () => {
    // The SDK client throws when structuredContent does not match a tool's outputSchema.
    const list = await client.callTool({ name: "connections_list", arguments: {} });
    expect(list.isError).toBeFalsy();
    expect((list.structuredContent as { status: string }).status).toBe("ok");
    const call = await client.callTool({
      name: "mcp_call",
      arguments: { service: "vendor", tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE },
    });
    expect((call.structuredContent as { status: string; code: string }).code).toBe("needs_connect");
    const connect = await client.callTool({ name: "connect", arguments: { service: "vendor" } });
    expect((connect.structuredContent as { status: string }).status).toBeTruthy();
  });
});
