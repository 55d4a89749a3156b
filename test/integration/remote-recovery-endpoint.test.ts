import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { type RemoteVendor, startRemoteVendor } from "../fixtures/remote-vendor.js";
import { ALICE, BOB, mcpCall, THREAD } from "./broker-harness.js";

// The outage of issue 15 part 4, replayed through the real app and its /mcp endpoint (real
// clock): a remote vendor restarted on the same port. Before, every later call failed
// vendor_crashed with the dead session id; now at most the first call after the restart fails
// (named vendor_disconnected, not retried) and every call after it runs. Streamable HTTP and SSE.

const HOST_TOKEN = `host-${randomBytes(8).toString("hex")}`;
const VENDOR_TOKEN = `remote-${randomBytes(8).toString("hex")}`;

describe("remote recovery through /mcp", () => {
  let dir: string;
  let app: RunningApp;
  let streamable: RemoteVendor;
  let sse: RemoteVendor;
  let client: Client;

  beforeAll(async () => {
    streamable = await startRemoteVendor({ tokens: { [VENDOR_TOKEN]: "alice-remote" } });
    sse = await startRemoteVendor({ tokens: { [VENDOR_TOKEN]: "alice-sse" }, streamable: false, sse: true });
    dir = mkdtempSync(path.join(os.tmpdir(), "slaude-remote-endpoint-"));
    const paste = { strategy: "paste", fields: [{ name: "token", label: "Token" }] };
    const svc = (url: string, protocol: string) => ({
      transport: {
        type: "http",
        url,
        protocol,
        credentialHeader: { name: "Authorization", value: "Bearer {{token}}" },
      },
      capture: paste,
      tools: { whoami: ["borrowable", "read"] },
    });
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
      membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE, BOB),
      registry: parseRegistry(
        { services: { remote: svc(streamable.url, "streamable-http"), legacy: svc(sse.sseUrl, "sse") } },
        "remote-endpoint",
      ),
    });
    for (const service of ["remote", "legacy"]) {
      await app.lifecycle.create({
        teamId: THREAD.teamId,
        ownerUserId: ALICE,
        service,
        scope: "thread",
        channelId: THREAD.channelId,
        threadTs: THREAD.threadTs,
        credential: { kind: "fields", fields: { token: VENDOR_TOKEN } },
        createdBy: ALICE,
      });
    }
    const turn = await fetch(`${app.url}/v1/turns`, {
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
      new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
        requestInit: {
          headers: {
            Authorization: `Bearer ${HOST_TOKEN}`,
            "X-Slaude-Thread": `${THREAD.teamId}/${THREAD.channelId}/${THREAD.threadTs}`,
          },
        },
      }),
    );
  });
  afterAll(async () => {
    await client?.close().catch(() => {});
    await app?.close();
    await Promise.all([streamable?.close(), sse?.close()]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const [service, who, vendor] of [
    ["remote", "alice-remote", () => streamable],
    ["legacy", "alice-sse", () => sse],
  ] as const) {
    it(`${service}: after a restart on the same port, at most one call fails (vendor_disconnected) and the next 20 run`, async () => {
      const call = () => mcpCall(client, { service, tool: "whoami", on_behalf_of: ALICE });
      expect((await call()).text.split("\n")[0]).toBe(who);
      await vendor().stop();
      await vendor().start();
      const first = await call();
      if (first.structured.status !== "ok") expect(first.structured.code).toBe("vendor_disconnected");
      const codes: string[] = [];
      for (let i = 0; i < 20; i++) {
        const r = await call();
        codes.push(r.structured.status === "ok" ? r.text.split("\n")[0]! : String(r.structured.code));
      }
      expect(codes).toEqual(Array.from({ length: 20 }, () => who));
    });
  }
});
