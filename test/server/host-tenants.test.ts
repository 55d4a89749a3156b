// Host tokens confined to their tenant, over real HTTP: the real app (SQLite, vault, pool), real SDK
// clients over Streamable HTTP, a real vendor child whose result is stored, raw node:http where a
// header must be forged. Two tenants: team TA (in the Enterprise Grid org E1) and team TB. A token
// bound to TA must get nothing of TB's: no session, no turn, no turn end, no stored result, no event;
// a session answers only the token that opened it, and an unbound token is refused with two tenants.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { checkUnboundHostTokens } from "../../src/app/host-routes.js";
import { demoRegistryDoc } from "../../src/config/demo-registry.js";
import { loadConfig } from "../../src/config/env.js";
import { ConfigError } from "../../src/config/errors.js";
import { parseRegistry } from "../../src/config/registry.js";
import type { ThreadRef } from "../../src/domain/thread.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { HostTeamAuth } from "../../src/server/host-teams.js";
import { SessionTokenDigests } from "../../src/server/session-token.js";
import { StaticTenantDirectory } from "../../src/tenancy/tenant-directory.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { SseReader } from "../events/sse-reader.js";
import { ALICE, BOB, TSX_LOADER } from "../integration/broker-harness.js";
import { testAppConfig } from "../support/app-config.js";
import { type RawResponse, rawRequest } from "../support/raw-http.js";

const TOKEN_A = `host-a-${randomBytes(16).toString("hex")}`;
const TOKEN_A2 = `host-a2-${randomBytes(16).toString("hex")}`;
const TOKEN_B = `host-b-${randomBytes(16).toString("hex")}`;
const TOKEN_E = `host-e-${randomBytes(16).toString("hex")}`;
const TOKEN_U = `host-u-${randomBytes(16).toString("hex")}`;
const ALL_TOKENS = [TOKEN_A, TOKEN_A2, TOKEN_B, TOKEN_E, TOKEN_U];
const CANARY = `canary-${randomBytes(12).toString("hex")}`;
const BIG_VENDOR = fileURLToPath(new URL("../fixtures/big-result-vendor.ts", import.meta.url));
const THREAD_A: ThreadRef = { teamId: "TA", channelId: "CA", threadTs: "1700000000.000100" };
const THREAD_B: ThreadRef = { teamId: "TB", channelId: "CB", threadTs: "1700000000.000200" };
const header = (t: ThreadRef): string => `${t.teamId}/${t.channelId}/${t.threadTs}`;
const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};
const ARGS = { lines: 400, width: 20, secretAt: 300 };

let dir: string;
let app: RunningApp;
const log = memoryLogger("debug");
const clients: Client[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-tenants-"));
  const config = testAppConfig(dir, `TA:${TOKEN_A},TA:${TOKEN_A2},TB:${TOKEN_B},E1:${TOKEN_E},${TOKEN_U}`, {
    SLAUDE_RESULT_MAX_BYTES: "2000",
    SLAUDE_RESULT_MAX_LINES: "50",
  });
  const registry = parseRegistry(
    {
      services: {
        big: {
          transport: {
            type: "stdio",
            command: process.execPath,
            args: ["--import", TSX_LOADER, BIG_VENDOR],
            credentialEnv: { VENDOR_TOKEN: "{{token}}" },
          },
          capture: { strategy: "paste", fields: [{ name: "token", label: "Token" }] },
          scopes: ["thread", "user"],
          tools: { listing: ["borrowable", "read"] },
        },
      },
    },
    "tenants-test.json",
  );
  const membership = new StaticMembership()
    .add(THREAD_A.teamId, THREAD_A.channelId, ALICE)
    .add(THREAD_B.teamId, THREAD_B.channelId, BOB);
  // Two installations: TA, a workspace of the org E1, and TB, on its own.
  const tenants = new StaticTenantDirectory(2, new Map([["TA", "E1"]]));
  app = await startApp({ config, log, membership, registry, tenants });
  for (const [teamId, owner] of [
    [THREAD_A.teamId, ALICE],
    [THREAD_B.teamId, BOB],
  ] as const) {
    await app.lifecycle.create({
      teamId,
      ownerUserId: owner,
      service: "big",
      scope: "user",
      channelId: null,
      threadTs: null,
      credential: { kind: "fields", fields: { token: CANARY } },
      createdBy: owner,
    });
  }
}, 60_000);

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

function raw(opts: {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}): Promise<RawResponse> {
  return rawRequest(app.port, opts);
}

/** A raw /mcp request with `token`, naming session `sessionId` when given. */
function mcp(
  token: string,
  opts: { method?: string; sessionId?: string; thread?: ThreadRef; body?: unknown; accept?: string } = {},
): Promise<RawResponse> {
  return raw({
    method: opts.method ?? "POST",
    path: "/mcp",
    headers: {
      accept: opts.accept ?? "application/json, text/event-stream",
      authorization: `Bearer ${token}`,
      ...(opts.sessionId ? { "mcp-session-id": opts.sessionId, "mcp-protocol-version": "2025-06-18" } : {}),
      ...(opts.thread ? { "x-slaude-thread": header(opts.thread) } : {}),
    },
    ...(opts.body !== undefined ? { body: opts.body } : {}),
  });
}

function turn(token: string, t: ThreadRef, user: string, explicit = false): Promise<RawResponse> {
  return raw({
    path: "/v1/turns",
    headers: { authorization: `Bearer ${token}` },
    body: {
      team_id: t.teamId,
      channel_id: t.channelId,
      thread_ts: t.threadTs,
      user_id: user,
      ...(explicit ? { explicit_end: true } : {}),
    },
  });
}

async function session(token: string, t: ThreadRef): Promise<{ client: Client; id: string }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}`, "X-Slaude-Thread": header(t) } },
  });
  const client = new Client({ name: "tenant-host", version: "1" });
  await client.connect(transport);
  clients.push(client);
  return { client, id: transport.sessionId! };
}

/** The refusal code of a /mcp answer (JSON-RPC `error.data.error`) or of a /v1 answer (`error`). */
function codeOf(r: RawResponse): string | undefined {
  const doc = JSON.parse(r.body) as { error?: string | { data?: { error?: string } } };
  return typeof doc.error === "string" ? doc.error : doc.error?.data?.error;
}

/** A refusal's body names no host token. */
function namesNoToken(r: RawResponse): void {
  for (const t of ALL_TOKENS) expect(r.body).not.toContain(t);
}

describe("a host token bound to team TA, in team TB's threads", () => {
  it("gets 403 tenant_forbidden on every 2026-07-28 request too; its own team's thread is served", async () => {
    const envelope = {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
      "io.modelcontextprotocol/clientCapabilities": {},
    };
    const modern = (t: ThreadRef) =>
      raw({
        path: "/mcp",
        headers: {
          accept: "application/json, text/event-stream",
          authorization: `Bearer ${TOKEN_A}`,
          "x-slaude-thread": header(t),
          "mcp-protocol-version": "2026-07-28",
          "mcp-method": "tools/list",
        },
        body: { jsonrpc: "2.0", id: 5, method: "tools/list", params: { _meta: envelope } },
      });
    const refused = await modern(THREAD_B);
    expect(refused.status).toBe(403);
    expect(codeOf(refused)).toBe("tenant_forbidden");
    namesNoToken(refused);
    const own = await modern(THREAD_A);
    expect(own.status, own.body).toBe(200);
    expect(own.body).toContain("mcp_call");
  });

  it("gets 403 tenant_forbidden on initialize, /v1/turns and /v1/turns/end, and nothing is opened or recorded", async () => {
    const before = app.mcp.sessionCount;
    const init = await mcp(TOKEN_A, { thread: THREAD_B, body: INIT });
    expect(init.status).toBe(403);
    expect(codeOf(init)).toBe("tenant_forbidden");
    expect(JSON.parse(init.body).error.message).toContain("TB");
    namesNoToken(init);
    expect(app.mcp.sessionCount).toBe(before);

    // TB's own host reports Bob's explicit turn; TA's token may neither replace nor end it.
    const own = await turn(TOKEN_B, THREAD_B, BOB, true);
    expect(own.status).toBe(204);
    const turnId = own.headers["x-slaude-turn"] as string;
    const forged = await turn(TOKEN_A, THREAD_B, ALICE);
    expect(forged.status).toBe(403);
    expect(codeOf(forged)).toBe("tenant_forbidden");
    namesNoToken(forged);
    expect(await app.broker.turns.current(THREAD_B)).toBe(BOB);
    const end = await raw({
      path: "/v1/turns/end",
      headers: { authorization: `Bearer ${TOKEN_A}` },
      body: { turn_id: turnId },
    });
    expect(end.status).toBe(403);
    expect(codeOf(end)).toBe("tenant_forbidden");
    // Still live: TB's own token ends it (once).
    expect(
      (await raw({ path: "/v1/turns/end", headers: { authorization: `Bearer ${TOKEN_B}` }, body: { turn_id: turnId } }))
        .status,
    ).toBe(204);
    // In its own team the same token works as before.
    expect((await turn(TOKEN_A, THREAD_A, ALICE)).status).toBe(204);
    expect((await mcp(TOKEN_A, { thread: THREAD_A, body: INIT })).status).toBe(200);
  });

  it("cannot read TB's stored result: not through TB's session (403), not by its URI from its own session (not found)", async () => {
    const b = await session(TOKEN_B, THREAD_B);
    expect((await turn(TOKEN_B, THREAD_B, BOB)).status).toBe(204);
    const call = await b.client.callTool({
      name: "mcp_call",
      arguments: { service: "big", tool: "listing", args: ARGS, on_behalf_of: BOB },
    });
    const uri = (call.structuredContent as { fullResult: { uri: string } }).fullResult.uri;
    expect(uri).toMatch(/^slaude:\/\/results\/res_/);

    const read = { jsonrpc: "2.0", id: 9, method: "resources/read", params: { uri } };
    const stolen = await mcp(TOKEN_A, { sessionId: b.id, body: read });
    expect(stolen.status).toBe(403);
    expect(codeOf(stolen)).toBe("session_token_mismatch");
    expect(stolen.body).not.toContain("line 0000");
    namesNoToken(stolen);

    const a = await session(TOKEN_A, THREAD_A);
    expect((await turn(TOKEN_A, THREAD_A, ALICE)).status).toBe(204);
    await expect(a.client.readResource({ uri })).rejects.toMatchObject({ code: -32602 });

    // TB's owner still reads it, in its session: the refused requests changed nothing.
    const page = await b.client.readResource({ uri });
    expect((page.contents[0] as { text: string }).text).toContain("line 000001");
    expect(JSON.stringify(page)).not.toContain(CANARY);
  }, 60_000);

  it("gets 403 on TB's event stream, and its own stream carries none of TB's calls", async () => {
    const refused = await raw({
      method: "GET",
      path: "/v1/events?team_id=TB",
      headers: { authorization: `Bearer ${TOKEN_A}` },
    });
    expect(refused.status).toBe(403);
    expect(codeOf(refused)).toBe("tenant_forbidden");
    expect(
      (await raw({ method: "GET", path: "/v1/events?team_id=bad/id", headers: { authorization: `Bearer ${TOKEN_A}` } }))
        .status,
    ).toBe(400);
    const own = await SseReader.open(`${app.url}/v1/events?team_id=TA`, TOKEN_A);
    try {
      const b = await session(TOKEN_B, THREAD_B);
      expect((await turn(TOKEN_B, THREAD_B, BOB)).status).toBe(204);
      await b.client.callTool({
        name: "mcp_call",
        arguments: { service: "big", tool: "listing", args: { lines: 3, width: 1, secretAt: 0 }, on_behalf_of: BOB },
      });
      const a = await session(TOKEN_A, THREAD_A);
      expect((await turn(TOKEN_A, THREAD_A, ALICE)).status).toBe(204);
      await a.client.callTool({
        name: "mcp_call",
        arguments: { service: "big", tool: "listing", args: { lines: 3, width: 1, secretAt: 0 }, on_behalf_of: ALICE },
      });
      // TB's call came first on the one ordered bus: had it leaked, it would be here by now.
      await own.waitFor((e) => e.event === "call.ended" && e.data.teamId === "TA");
      expect(own.events.every((e) => e.data.teamId === "TA")).toBe(true);
    } finally {
      own.close();
    }
  }, 60_000);
});

describe("a session and the token that opened it", () => {
  it("refuses every other host token (even one bound to the same team) on every kind of request, and the session stays intact", async () => {
    const { client, id } = await session(TOKEN_A, THREAD_A);
    const requests = [
      { body: { jsonrpc: "2.0", id: 2, method: "tools/list" } },
      {
        body: {
          jsonrpc: "2.0",
          id: 3,
          method: "tools/call",
          params: { name: "mcp_call", arguments: { service: "big", tool: "listing", args: ARGS, on_behalf_of: ALICE } },
        },
      },
      {
        body: {
          jsonrpc: "2.0",
          id: 4,
          method: "resources/read",
          params: { uri: "slaude://results/res_AAAAAAAAAAAAAAAA" },
        },
      },
      { body: { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 3 } } },
      { method: "GET", accept: "text/event-stream" },
      { method: "DELETE" },
    ];
    for (const other of [TOKEN_A2, TOKEN_B, TOKEN_E]) {
      for (const r of requests) {
        const answer = await mcp(other, { sessionId: id, thread: THREAD_A, ...r });
        expect(answer.status, `${r.method ?? "POST"} ${JSON.stringify(r.body ?? {})}`).toBe(403);
        expect(codeOf(answer)).toBe("session_token_mismatch");
        namesNoToken(answer);
      }
    }
    // Not ended, not used up: its own token goes on.
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    expect((await mcp(TOKEN_A, { sessionId: id, body: { jsonrpc: "2.0", id: 5, method: "tools/list" } })).status).toBe(
      200,
    );
    // A token that is no host token at all is still a 401.
    expect(
      (await mcp("not-a-host-token", { sessionId: id, body: { jsonrpc: "2.0", id: 6, method: "tools/list" } })).status,
    ).toBe(401);
  });
});

describe("a host token bound to the org E1", () => {
  it("acts in the threads of E1's team TA only; its event stream carries TA's calls and not TB's", async () => {
    const refused = await mcp(TOKEN_E, { thread: THREAD_B, body: INIT });
    expect(refused.status).toBe(403);
    expect(codeOf(refused)).toBe("tenant_forbidden");
    expect((await turn(TOKEN_E, THREAD_B, BOB)).status).toBe(403);
    expect(
      (await raw({ method: "GET", path: "/v1/events?team_id=TB", headers: { authorization: `Bearer ${TOKEN_E}` } }))
        .status,
    ).toBe(403);

    const stream = await SseReader.open(`${app.url}/v1/events`, TOKEN_E);
    try {
      const b = await session(TOKEN_B, THREAD_B);
      expect((await turn(TOKEN_B, THREAD_B, BOB)).status).toBe(204);
      await b.client.callTool({
        name: "mcp_call",
        arguments: { service: "big", tool: "listing", args: { lines: 3, width: 1, secretAt: 0 }, on_behalf_of: BOB },
      });
      const e = await session(TOKEN_E, THREAD_A);
      expect((await turn(TOKEN_E, THREAD_A, ALICE)).status).toBe(204);
      const r = await e.client.callTool({
        name: "mcp_call",
        arguments: { service: "big", tool: "listing", args: { lines: 3, width: 1, secretAt: 0 }, on_behalf_of: ALICE },
      });
      expect(r.isError).toBeFalsy();
      await stream.waitFor((ev) => ev.event === "call.ended" && ev.data.teamId === "TA");
      expect(stream.events.every((ev) => ev.data.teamId === "TA")).toBe(true);
    } finally {
      stream.close();
    }
  }, 60_000);
});

describe("an unbound host token with two installations", () => {
  it("is refused with token_not_bound_to_team on /mcp and /v1/turns; the start-up log said so without the token", async () => {
    const init = await mcp(TOKEN_U, { thread: THREAD_A, body: INIT });
    expect(init.status).toBe(403);
    expect(codeOf(init)).toBe("token_not_bound_to_team");
    expect(JSON.parse(init.body).error.message).toContain("<team_id>:<token>");
    const t = await turn(TOKEN_U, THREAD_A, ALICE);
    expect(t.status).toBe(403);
    expect(codeOf(t)).toBe("token_not_bound_to_team");
    const warning = log.lines.find((l) => l.includes("UNBOUND HOST TOKENS"));
    expect(warning).toContain("1 host token(s)");
    for (const tok of ALL_TOKENS) expect(log.lines.join("\n")).not.toContain(tok);
  });

  it("stops a production start with a message naming the variable and the fix, never the token", async () => {
    const ring = new KeyRing(randomBytes(32));
    const prod = testAppConfig(dir, `TA:${TOKEN_A},${TOKEN_U}`, { NODE_ENV: "production" });
    const auth = new HostTeamAuth(prod.hostTokens, prod.hostTokenTeams, new SessionTokenDigests(ring));
    const err = await checkUnboundHostTokens(auth, new StaticTenantDirectory(2), prod, memoryLogger()).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain("SLAUDE_HOST_TOKENS");
    expect((err as Error).message).toContain("<team_id>:<token>");
    expect((err as Error).message).not.toContain(TOKEN_U);
    // One installation (today's deployments): the same tokens start.
    await expect(
      checkUnboundHostTokens(auth, new StaticTenantDirectory(1), prod, memoryLogger()),
    ).resolves.toBeUndefined();
  });
});

describe("today's single-workspace deployments", () => {
  it("the local workspace (T_LOCAL, one installation) keeps serving the unbound development token on /mcp and /v1/turns", async () => {
    const devDir = mkdtempSync(path.join(os.tmpdir(), "slaude-tenants-dev-"));
    // NODE_ENV unset: development, the local workspace, a generated host token bound to no team.
    const dev = await startApp({
      config: loadConfig({
        SLAUDE_DATA_DIR: devDir,
        PORT: "0",
        SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
        PATH: process.env.PATH ?? "/usr/bin:/bin",
      }),
      log: memoryLogger(),
      registry: parseRegistry(demoRegistryDoc(), "demo"),
    });
    try {
      expect(dev.workspace.kind).toBe("local");
      const token = dev.hostToken!;
      const local: ThreadRef = { teamId: "T_LOCAL", channelId: "C_GENERAL", threadTs: "1700000000.000100" };
      const transport = new StreamableHTTPClientTransport(new URL(`${dev.url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}`, "X-Slaude-Thread": header(local) } },
      });
      const client = new Client({ name: "local-host", version: "1" });
      await client.connect(transport);
      try {
        expect((await client.listTools()).tools.length).toBeGreaterThan(0);
        const r = await rawRequest(dev.port, {
          path: "/v1/turns",
          headers: { authorization: `Bearer ${token}` },
          body: { team_id: local.teamId, channel_id: local.channelId, thread_ts: local.threadTs, user_id: "UALICE" },
        });
        expect(r.status).toBe(204);
      } finally {
        await client.close();
      }
    } finally {
      await dev.close();
      rmSync(devDir, { recursive: true, force: true });
    }
  }, 60_000);
});
