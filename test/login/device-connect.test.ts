// From the `connect` tool to a stored connection, for a device service whose registry entry names
// only the issuer: the real app with the local workspace, a real MCP client on /mcp, the consent
// card in the caller's own inbox, its Continue, the private login page (live-view socket) showing
// the code, the fake authorization server's metadata naming the endpoints, the user approving on
// "another device", and the connection stored for her; then an mcp_call runs the vendor child with
// the device access token.
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { type FakeDeviceAs, startFakeDeviceAs } from "../fixtures/device-as.js";
import { VENDOR_STDIO_PATH } from "../fixtures/paths.js";
import { mcpCall, TSX_LOADER } from "../integration/broker-harness.js";
import { testAppConfig } from "../support/app-config.js";

vi.setConfig({ testTimeout: 90_000 });
const HOST_TOKEN = `host-${randomBytes(8).toString("hex")}`;
const ALICE = "UALICE";
let as: FakeDeviceAs | undefined;
let app: RunningApp | undefined;
let client: Client | undefined;
let ws: WebSocket | undefined;
let dir: string;

afterEach(async () => {
  ws?.close();
  await client?.close().catch(() => undefined);
  await app?.close();
  await as?.close();
  rmSync(dir, { recursive: true, force: true });
});

it("connect → consent card → Continue → code from discovered endpoints → approved → connection stored → mcp_call runs with it", async () => {
  // Real time (a real vendor child and pool); the server's 1 s interval keeps it short.
  as = await startFakeDeviceAs({ clientId: "slaude-device", now: () => Date.now(), intervalS: 1 });
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-device-connect-"));
  const transport = {
    type: "stdio",
    command: process.execPath,
    args: ["--import", TSX_LOADER, VENDOR_STDIO_PATH],
    env: { VENDOR_USER: "alice-device" },
    credentialEnv: { VENDOR_TOKEN: "{{access_token}}" },
  };
  app = await startApp({
    config: testAppConfig(dir, HOST_TOKEN, { SLAUDE_WORKSPACE: "local" }),
    log: memoryLogger("debug"),
    registry: parseRegistry(
      {
        services: {
          vendor: {
            transport,
            capture: { strategy: "device", device: { issuer: as.url, clientId: "slaude-device" } },
            tools: { read_item: ["borrowable", "read"] },
          },
        },
      },
      "test",
    ),
  });
  const a = app;
  const local = a.workspace.local!;
  const thread = await local.startThread("C_GENERAL", ALICE);
  const turn = await fetch(`${a.url}/v1/turns`, {
    method: "POST",
    headers: { authorization: `Bearer ${HOST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      team_id: thread.teamId,
      channel_id: thread.channelId,
      thread_ts: thread.threadTs,
      user_id: ALICE,
    }),
  });
  expect(turn.status).toBe(204);
  client = new Client({ name: "device-connect-test", version: "1" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), {
      requestInit: {
        headers: {
          Authorization: `Bearer ${HOST_TOKEN}`,
          "X-Slaude-Thread": `${thread.teamId}/${thread.channelId}/${thread.threadTs}`,
        },
      },
    }),
  );

  // The model asks to connect; the card goes to Alice's own inbox, never into the conversation.
  const connect = await client.callTool({ name: "connect", arguments: { service: "vendor" } });
  expect((connect.structuredContent as { status: string }).status).toBe("consent_sent");
  const card = await vi.waitFor(
    async () => {
      const item = (await local.inbox(ALICE)).find((i) => i.card.kind === "consent");
      if (!item) throw new Error("no consent card yet");
      return item;
    },
    { timeout: 20_000 },
  );
  const minted = await local.continueConsent(card.id, ALICE);
  if (!("url" in minted)) throw new Error(`not minted: ${minted.refused}`);

  // Alice's browser opens the private page; the code arrives on its socket.
  const page = await fetch(`${a.url}${new URL(minted.url).pathname}`, { redirect: "manual" });
  await page.text();
  expect(page.status).toBe(200);
  const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
  const sessionId = cookie.split("=")[1]!.split(".")[0]!;
  const socket = new WebSocket(`${a.url.replace("http", "ws")}/login/ws?s=${encodeURIComponent(sessionId)}`, {
    headers: { origin: a.url, cookie },
  });
  ws = socket;
  const messages: { type: string; userCode?: string; verificationUri?: string; state?: string }[] = [];
  socket.on("message", (d) => messages.push(JSON.parse(String(d)) as (typeof messages)[number]));
  await new Promise((resolve) => socket.once("open", resolve));
  socket.send(JSON.stringify({ type: "viewport", width: 1024, height: 768 }));
  const code = await vi.waitFor(
    () => {
      const m = messages.find((x) => x.type === "device_code");
      if (!m?.userCode) throw new Error("no code yet");
      return m;
    },
    { timeout: 20_000 },
  );
  // The endpoints came from the issuer's metadata.
  expect(as.metadataRequests).toContain("/.well-known/oauth-authorization-server");
  expect(code.verificationUri).toBe(`${as.url}/device`);
  expect(as.authorizations.map((x) => x.userCode)).toEqual([code.userCode]);

  as.approve(code.userCode!);
  await vi.waitFor(() => expect(messages.some((x) => x.type === "status" && x.state === "captured")).toBe(true), {
    timeout: 30_000,
  });
  const [conn] = await a.store.connections.list({ service: "vendor" });
  expect(conn).toMatchObject({ ownerUserId: ALICE, teamId: thread.teamId, status: "active" });
  expect(await a.store.audit.query({ event: "login_completed" })).toEqual([
    expect.objectContaining({ callerUserId: ALICE, service: "vendor" }),
  ]);

  const r = await mcpCall(client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE });
  expect(r.isError, r.text).toBe(false);
  const out = JSON.parse(r.text.split("\n")[0]!) as { tokenFingerprint: string };
  const token = as.authorizations[0]!.accessToken;
  expect(out.tokenFingerprint).toBe(createHash("sha256").update(token).digest("hex").slice(0, 12));
  expect(r.text).not.toContain(token);
});
