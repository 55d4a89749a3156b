// A device login end to end through the real app: the connecting user's private page gets the code
// over the live-view socket, the fake authorization server approves, the connection is stored for
// her, and an `mcp_call` through the real /mcp endpoint runs the vendor child with that access token.
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { type FakeDeviceAs, startFakeDeviceAs } from "../fixtures/device-as.js";
import { VENDOR_STDIO_PATH } from "../fixtures/paths.js";
import { ALICE, mcpCall, THREAD, TSX_LOADER } from "../integration/broker-harness.js";

vi.setConfig({ testTimeout: 90_000 });
const HOST_TOKEN = `host-${randomBytes(8).toString("hex")}`;
let as: FakeDeviceAs | undefined;
let app: RunningApp | undefined;
let client: Client | undefined;
let dir: string;

afterEach(async () => {
  await client?.close().catch(() => undefined);
  await app?.close();
  await as?.close();
  rmSync(dir, { recursive: true, force: true });
});

it("device login → connection stored for the minting user → mcp_call runs the vendor with the device access token", async () => {
  // Real time here (a real vendor child and pool); the server's 1 s interval keeps it short.
  as = await startFakeDeviceAs({ clientId: "slaude-device", now: () => Date.now(), intervalS: 1 });
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-device-call-"));
  const transport = {
    type: "stdio",
    command: process.execPath,
    args: ["--import", TSX_LOADER, VENDOR_STDIO_PATH],
    env: { VENDOR_USER: "alice-device" },
    credentialEnv: { VENDOR_TOKEN: "{{access_token}}" },
  };
  const device = {
    deviceAuthorizationEndpoint: `${as.url}/device_authorization`,
    tokenEndpoint: `${as.url}/token`,
    clientId: "slaude-device",
  };
  app = await startApp({
    config: loadConfig({
      NODE_ENV: "test",
      SLAUDE_DATA_DIR: dir,
      PORT: "0",
      SLAUDE_HOST_TOKENS: HOST_TOKEN,
      SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      PATH: process.env.PATH ?? "/usr/bin:/bin",
    }),
    log: memoryLogger("debug"),
    membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE),
    registry: parseRegistry(
      {
        services: {
          vendor: { transport, capture: { strategy: "device", device }, tools: { read_item: ["borrowable", "read"] } },
        },
      },
      "test",
    ),
  });
  const a = app;

  const link = await a.logins.mint({ ...THREAD, userId: ALICE, service: "vendor" });
  const res = await fetch(`${a.url}${new URL(link.url).pathname}`, { redirect: "manual" });
  await res.text();
  expect(res.status).toBe(200);
  const ws = new WebSocket(`${a.url.replace("http", "ws")}/login/ws?s=${encodeURIComponent(link.sessionId)}`, {
    headers: { origin: a.url, cookie: res.headers.get("set-cookie")?.split(";")[0] ?? "" },
  });
  const messages: { type: string; userCode?: string; state?: string }[] = [];
  ws.on("message", (d) => messages.push(JSON.parse(String(d)) as (typeof messages)[number]));
  await new Promise((resolve) => ws.once("open", resolve));
  ws.send(JSON.stringify({ type: "viewport", width: 1024, height: 768 }));
  const userCode = await vi.waitFor(
    () => {
      const m = messages.find((x) => x.type === "device_code");
      if (!m?.userCode) throw new Error("no code yet");
      return m.userCode;
    },
    { timeout: 20_000 },
  );
  as.approve(userCode);
  await vi.waitFor(() => expect(messages.some((x) => x.type === "status" && x.state === "captured")).toBe(true), {
    timeout: 30_000,
  });
  ws.close();
  const [conn] = await a.store.connections.list({ service: "vendor" });
  expect(conn).toMatchObject({ ownerUserId: ALICE, status: "active" });

  const turn = await fetch(`${a.url}/v1/turns`, {
    method: "POST",
    headers: { authorization: `Bearer ${HOST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      team_id: THREAD.teamId,
      channel_id: THREAD.channelId,
      thread_ts: THREAD.threadTs,
      user_id: ALICE,
    }),
  });
  expect(turn.status).toBe(204);
  client = new Client({ name: "test-host", version: "1" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`), {
      requestInit: {
        headers: {
          Authorization: `Bearer ${HOST_TOKEN}`,
          "X-Slaude-Thread": `${THREAD.teamId}/${THREAD.channelId}/${THREAD.threadTs}`,
        },
      },
    }),
  );
  const r = await mcpCall(client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE });
  expect(r.isError, r.text).toBe(false);
  const out = JSON.parse(r.text.split("\n")[0]!) as { ranAs: string; tokenFingerprint: string };
  const token = as.authorizations.find((x) => x.userCode === userCode)!.accessToken;
  expect(out.tokenFingerprint).toBe(createHash("sha256").update(token).digest("hex").slice(0, 12));
  expect(r.text).not.toContain(token);
});
