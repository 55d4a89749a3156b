// Smoke test: the remote fixture vendor speaks Streamable HTTP and legacy SSE to real SDK clients, with bearer auth.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RemoteVendor, startRemoteVendor } from "../fixtures/remote-vendor.js";

const TOKENS = { "tok-alice": "alice", "tok-bob": "bob" };
const bearer = (token: string): RequestInit => ({ headers: { Authorization: `Bearer ${token}` } });

const clients: Client[] = [];

async function connect(transport: Transport): Promise<Client> {
  const client = new Client({ name: "smoke", version: "0.0.1" });
  await client.connect(transport);
  clients.push(client);
  return client;
}

function textOf(result: Awaited<ReturnType<Client["callTool"]>>): string {
  const content = result.content as Array<{ type: string; text?: string }>;
  return content.map((c) => c.text ?? "").join("");
}

afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
});

describe("remote-vendor fixture (streamable + sse)", () => {
  let vendor: RemoteVendor;

  beforeAll(async () => {
    vendor = await startRemoteVendor({ tokens: TOKENS, sse: true });
  });
  afterAll(async () => {
    await vendor.close();
  });

  it("serves Streamable HTTP with per-token identity", async () => {
    const client = await connect(
      new StreamableHTTPClientTransport(new URL(vendor.url), { requestInit: bearer("tok-alice") }),
    );
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(["echo", "whoami", "write_note"]);
    expect(textOf(await client.callTool({ name: "echo", arguments: { text: "hi" } }))).toBe("hi");
    expect(textOf(await client.callTool({ name: "whoami", arguments: {} }))).toBe("alice");
    await client.callTool({ name: "write_note", arguments: { text: "n1" } });
    expect(vendor.notes).toContainEqual({ user: "alice", text: "n1" });
    const mcpRequests = vendor.requests.filter((r) => r.path === "/mcp");
    expect(mcpRequests.length).toBeGreaterThan(2);
    expect(mcpRequests.every((r) => r.authorization === "Bearer tok-alice")).toBe(true);
  });

  it("serves legacy SSE", async () => {
    const client = await connect(new SSEClientTransport(new URL(vendor.sseUrl), { requestInit: bearer("tok-bob") }));
    expect(textOf(await client.callTool({ name: "whoami", arguments: {} }))).toBe("bob");
    await client.callTool({ name: "write_note", arguments: { text: "n2" } });
    expect(vendor.notes).toContainEqual({ user: "bob", text: "n2" });
    const sseRequests = vendor.requests.filter((r) => r.path === "/sse" || r.path === "/messages");
    expect(sseRequests.some((r) => r.path === "/sse")).toBe(true);
    expect(sseRequests.every((r) => r.authorization === "Bearer tok-bob")).toBe(true);
  });

  it("rejects a wrong or missing token with 401 + WWW-Authenticate", async () => {
    await expect(
      connect(new StreamableHTTPClientTransport(new URL(vendor.url), { requestInit: bearer("tok-mallory") })),
    ).rejects.toMatchObject({ code: 401 });
    await expect(
      connect(new SSEClientTransport(new URL(vendor.sseUrl), { requestInit: bearer("nope") })),
    ).rejects.toMatchObject({ code: 401 });
    const res = await fetch(vendor.url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: "{}",
    });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(vendor.requests).toContainEqual({ method: "POST", path: "/mcp", authorization: "Bearer tok-mallory" });
  });
});

describe("remote-vendor fixture (sse only)", () => {
  let vendor: RemoteVendor;

  beforeAll(async () => {
    vendor = await startRemoteVendor({ tokens: TOKENS, sse: true, streamable: false });
  });
  afterAll(async () => {
    await vendor.close();
  });

  it("answers 404 at /mcp so a client must fall back to SSE", async () => {
    await expect(
      connect(new StreamableHTTPClientTransport(new URL(vendor.url), { requestInit: bearer("tok-alice") })),
    ).rejects.toMatchObject({ code: 404 });
    const client = await connect(new SSEClientTransport(new URL(vendor.sseUrl), { requestInit: bearer("tok-alice") }));
    expect(textOf(await client.callTool({ name: "whoami", arguments: {} }))).toBe("alice");
  });
});

describe("remote-vendor fixture (streamable only by default)", () => {
  it("does not serve SSE unless asked", async () => {
    const vendor = await startRemoteVendor({ tokens: TOKENS });
    try {
      const res = await fetch(vendor.sseUrl, { headers: { Authorization: "Bearer tok-alice" } });
      expect(res.status).toBe(404);
    } finally {
      await vendor.close();
    }
  });
});
