import { afterEach, describe, expect, it, vi } from "vitest";
import { REDACTED } from "../../src/hygiene/redact.js";
import { HOSTILE_CONTENT_VENDOR_PATH } from "../fixtures/paths.js";
import {
  ALICE,
  BOB,
  CAROL,
  fixtureRegistryDoc,
  type Harness,
  makeHarness,
  mcpCall,
  type THREAD,
  TSX_LOADER,
} from "./broker-harness.js";

// Issue 9 items 3-6: a vendor attacks the broker with what it *says* (error codes, metadata,
// oversized frames, encoded credentials), through a real child process and a real MCP client.

/** The harness registry plus the hostile-content vendor as service `hostile`. */
function registryDoc(): unknown {
  const base = fixtureRegistryDoc() as { services: Record<string, unknown> };
  return {
    services: {
      ...base.services,
      hostile: {
        transport: {
          type: "stdio",
          command: process.execPath,
          args: ["--import", TSX_LOADER, HOSTILE_CONTENT_VENDOR_PATH],
          credentialEnv: { VENDOR_TOKEN: "{{token}}", VENDOR_USER: "{{user}}" },
        },
        capture: {
          strategy: "paste",
          fields: [
            { name: "token", label: "Token" },
            { name: "user", label: "User", secret: false },
          ],
        },
        scopes: ["thread"],
        tools: {
          echo: ["borrowable", "read"],
          pid: ["borrowable", "read"],
          rpc_error: ["borrowable", "read"],
          huge: ["borrowable", "read"],
          leak_forms: ["borrowable", "read"],
        },
      },
    },
  };
}

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function pidOf(client: Awaited<ReturnType<Harness["session"]>>["client"]): Promise<string> {
  const r = await mcpCall(client, { service: "hostile", tool: "pid", on_behalf_of: ALICE });
  expect(r.structured.status).toBe("ok");
  return r.text.split("\n")[0] ?? "";
}

describe("item 3: a vendor's JSON-RPC error codes never pass for the broker's own timeout or close", () => {
  it("-32001 and -32000 from the vendor are vendor errors; the child is neither killed nor restarted", async () => {
    h = await makeHarness({ registryDoc: registryDoc() });
    const { connection } = await h.connect(ALICE, { service: "hostile" });
    const s = await h.session();
    const pid = await pidOf(s.client);
    for (const code of [-32001, -32000]) {
      const r = await mcpCall(s.client, { service: "hostile", tool: "rpc_error", args: { code }, on_behalf_of: ALICE });
      expect(r.structured.code, `code ${code}`).toBe("vendor_error");
      expect(r.text).toContain(`vendor chose code ${code}`);
      expect(h.broker.pool.has(connection.id)).toBe(true);
      expect(await pidOf(s.client)).toBe(pid);
    }
    const rows = await h.store.audit.query({ connectionId: connection.id, event: "call" });
    expect(rows.filter((r) => r.tool === "rpc_error").map((r) => r.errorCode)).toEqual([
      "vendor_error",
      "vendor_error",
    ]);
    expect(h.broker.pool.stats().spawned).toBe(1);
    // A real exit is still the transport's close: vendor_crashed, and the next call respawns.
    await h.connect(ALICE);
    const crashed = await mcpCall(s.client, { tool: "crash", on_behalf_of: ALICE });
    expect(crashed.structured.code).toBe("vendor_crashed");
    expect((await mcpCall(s.client, { tool: "echo", args: { text: "back" }, on_behalf_of: ALICE })).text).toContain(
      "back",
    );
  });

  it("the broker's own deadline still reports vendor_timeout and kills the child", async () => {
    h = await makeHarness({ registryDoc: registryDoc(), callTimeoutMs: 3_000 });
    const { connection } = await h.connect(ALICE);
    const s = await h.session();
    const before = h.clock.pendingTimers();
    const call = mcpCall(s.client, { tool: "hang", on_behalf_of: ALICE });
    // The deadline runs on the broker's clock: advanced once the call has reached the vendor.
    await vi.waitFor(() => expect(h!.clock.pendingTimers()).toBe(before + 1), { timeout: 30_000 });
    h.clock.advance(3_000);
    const hung = await call;
    expect(hung.structured.code).toBe("vendor_timeout");
    expect(h.broker.pool.has(connection.id)).toBe(false);
  });
});

/** Whether `token` can be read back out of `text` by decoding any base64 or hex run at any alignment. */
function recoverable(text: string, token: string): boolean {
  if (text.includes(token) || text.includes(encodeURIComponent(token))) return true;
  const needle = Buffer.from(token);
  for (const run of text.match(/[A-Za-z0-9+/_-]{4,}/g) ?? []) {
    const std = run.replace(/-/g, "+").replace(/_/g, "/");
    for (let i = 0; i < 4; i++) if (Buffer.from(std.slice(i), "base64").includes(needle)) return true;
  }
  for (const run of text.match(/[0-9a-fA-F]{2,}/g) ?? [])
    for (let i = 0; i < 2; i++) if (Buffer.from(run.slice(i), "hex").includes(needle)) return true;
  return false;
}

describe("item 6: encoded and binary forms of the credential are redacted, and the result stays valid", () => {
  it("base64 at offsets 1/2, hex, image/audio data and resource.blob: redacted, still valid base64, audited as delivered", async () => {
    h = await makeHarness({ registryDoc: registryDoc() });
    const { connection, token } = await h.connect(ALICE, { service: "hostile" });
    const s = await h.session();
    // The real MCP client validates the broker's result against CallToolResultSchema (base64 included).
    const r = await mcpCall(s.client, { service: "hostile", tool: "leak_forms", on_behalf_of: ALICE });
    expect(r.structured.status).toBe("ok");
    const content = r.raw.content as (
      | { type: "text"; text: string }
      | { type: "image" | "audio"; data: string }
      | { type: "resource"; resource: { blob: string } }
    )[];
    const texts = content.flatMap((c) => (c.type === "text" ? [c.text] : []));
    const blobs = content.flatMap((c) =>
      c.type === "image" || c.type === "audio" ? [c.data] : c.type === "resource" ? [c.resource.blob] : [],
    );
    expect(texts.length).toBeGreaterThanOrEqual(2);
    expect(blobs).toHaveLength(4);
    for (const t of texts) expect(recoverable(t, token), t).toBe(false);
    expect(texts[0]).toContain(REDACTED);
    for (const b of blobs) {
      expect(() => atob(b)).not.toThrow();
      const bytes = Buffer.from(b, "base64");
      expect(bytes.includes(Buffer.from(token))).toBe(false);
      expect(bytes.includes(Buffer.from(REDACTED))).toBe(true);
    }
    expect(JSON.stringify(r.raw)).not.toContain(token);
    const rows = await h.store.audit.query({ connectionId: connection.id, event: "call" });
    expect(rows.map((x) => [x.tool, x.errorCode ?? null])).toEqual([["leak_forms", null]]);
  });
});

describe("item 5: a result over the 16 MiB frame cap is truncated, not fatal", () => {
  it("a 17 MiB result comes back truncated with the notice; the same child serves the next call; no partial token at the cut", async () => {
    // Result limits above the 64 KiB excerpt, so the excerpt's own cut is what the model sees.
    h = await makeHarness({
      registryDoc: registryDoc(),
      callTimeoutMs: 60_000,
      limits: { maxBytes: 200_000, maxLines: 10_000 },
    });
    const { connection, token } = await h.connect(ALICE, { service: "hostile" });
    const s = await h.session();
    const pid = await pidOf(s.client);
    // The SDK writes {"result":{"content":[{"type":"text","text":"…: the broker keeps the first 64 KiB
    // of the line, so this puts the token across that cut (its first half inside the excerpt).
    const prefix = '{"result":{"content":[{"type":"text","text":"'.length;
    const tokenAt = 64 * 1024 - prefix - Math.floor(token.length / 2);
    const r = await mcpCall(s.client, {
      service: "hostile",
      tool: "huge",
      args: { mib: 17, tokenAt },
      on_behalf_of: ALICE,
    });
    expect(r.structured.status).toBe("ok");
    expect(r.structured.truncated).toBe(true);
    expect(r.text.startsWith("HEAD-MARKER xxxx")).toBe(true);
    expect(r.text).toMatch(/result truncated: \d+ bytes exceeded the limit/);
    expect(r.text.length).toBeLessThan(70_000);
    // No part of the token (4+ characters of its start) ends the excerpt.
    const body = r.text.slice(0, r.text.indexOf("\n[slaude-connect: result truncated"));
    for (let n = 4; n <= token.length; n++)
      expect(body.endsWith(token.slice(0, n)), `partial token of ${n}`).toBe(false);
    expect(h.broker.pool.has(connection.id)).toBe(true);
    expect(await pidOf(s.client)).toBe(pid);
    expect(h.broker.pool.stats().spawned).toBe(1);
    const rows = await h.store.audit.query({ connectionId: connection.id, event: "call" });
    const huge = rows.find((x) => x.tool === "huge");
    expect(huge?.errorCode ?? null).toBeNull();
    expect(huge?.resultBytes).toBeGreaterThan(17 * 1024 * 1024);
  });
});

describe("item 4: vendor tool metadata is redacted before it is cached, and cached per team", () => {
  it("a token in tool metadata never reaches the cache row, another user, or another team", async () => {
    h = await makeHarness({ registryDoc: registryDoc() });
    const harness = h;
    const T2 = { teamId: "T2", channelId: "C9", threadTs: "1700000000.000900" };
    harness.membership.add(T2.teamId, T2.channelId, CAROL);
    const { token: tokenA } = await harness.connect(ALICE, { service: "hostile" });
    // Rows are read with SQL (the refresh runs beside the first call): what is on disk is what counts.
    const cacheRows = () =>
      harness.store.db.prepare("SELECT * FROM tool_metadata").all() as {
        team_id?: string;
        tools_json: string;
        content_hash: string;
      }[];
    const waitForRows = async (n: number) => {
      await vi.waitFor(() => expect(cacheRows()).toHaveLength(n), { timeout: 20_000, interval: 50 });
      return cacheRows();
    };
    const describe_ = async (
      client: Awaited<ReturnType<Harness["session"]>>["client"],
      args: Record<string, unknown>,
    ) => {
      const r = await client.callTool({ name: "mcp_describe", arguments: { service: "hostile", ...args } });
      return {
        all: JSON.stringify(r),
        s: r.structuredContent as { source: string; tools: { name: string; description: string }[] },
      };
    };

    const a = await harness.session();
    await pidOf(a.client);
    const rows = await waitForRows(1);
    // The cache row itself, every encoding checked by decoding.
    expect(recoverable(rows[0]!.tools_json, tokenA)).toBe(false);
    expect(rows[0]!.tools_json).toContain(REDACTED);
    expect(rows[0]!.team_id).toBe("T1");

    // Another user of the same team sees the redacted list and schema.
    a.turn.user = BOB;
    const bobAll = await describe_(a.client, {});
    expect(bobAll.s.source).toBe("cache");
    expect(bobAll.s.tools.find((t) => t.name === "echo")?.description).toContain(REDACTED);
    expect(recoverable(bobAll.all, tokenA)).toBe(false);
    const bobEcho = await describe_(a.client, { tool: "echo" });
    expect(recoverable(bobEcho.all, tokenA)).toBe(false);

    // Another team does not get team T1's metadata at all; its own is cached apart, redacted with its own credential.
    const c = await harness.session(T2 as typeof THREAD);
    c.turn.user = CAROL;
    expect((await describe_(c.client, {})).s.source).toBe("registry");
    const { token: tokenC } = await harness.connect(CAROL, { service: "hostile", thread: T2 as typeof THREAD });
    await mcpCall(c.client, { service: "hostile", tool: "echo", args: { text: "hi" }, on_behalf_of: CAROL });
    const both = await waitForRows(2);
    expect(both.map((r) => r.team_id).sort()).toEqual(["T1", "T2"]);
    for (const r of both) expect(recoverable(r.tools_json, tokenA) || recoverable(r.tools_json, tokenC)).toBe(false);
    const carol = await describe_(c.client, { tool: "echo" });
    expect(carol.s.source).toBe("cache");
    expect(recoverable(carol.all, tokenA)).toBe(false);
    expect(recoverable(carol.all, tokenC)).toBe(false);
    expect(both.find((r) => r.team_id === "T1")?.content_hash).toBe(rows[0]!.content_hash);
  });
});
