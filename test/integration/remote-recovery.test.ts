import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type RemoteVendor, startRemoteVendor } from "../fixtures/remote-vendor.js";
import { ALICE, type Harness, makeHarness, mcpCall } from "./broker-harness.js";

// Issue 15 part 4: remote vendors that go down and come back on the same port, through the broker
// (real MCP clients, the real pool and launcher, real servers on loopback, Streamable HTTP and SSE).
// A transport failure during a call drops that session and is named (never "vendor process
// stopped"); the next call opens a new session; connects that keep failing back off on the clock,
// visibly; a 401 is a rejected credential. Calls are never retried by the broker.

const paste = {
  strategy: "paste",
  fields: [
    { name: "token", label: "Token" },
    { name: "user", label: "User", secret: false },
  ],
};
const bearer = { name: "Authorization", value: "Bearer {{token}}" };
const TOKEN = "remote-recovery-alice";
const iso = (ms: number) => new Date(ms).toISOString();

interface Listed {
  id: string;
  unreachableUntil?: string;
  unavailable?: { reason: string; since: string; retryAt?: string; failures?: number; lastError: string };
}

describe("remote vendors recover from an outage", () => {
  let plain: RemoteVendor;
  let streamed: RemoteVendor;
  let sse: RemoteVendor;
  let h: Harness;
  // Read live by the fixture: deleting a token revokes it on the vendor's side.
  const plainTokens: Record<string, string> = { [TOKEN]: "alice-plain" };

  beforeAll(async () => {
    // No standalone GET stream: the broker learns of a restart only from its next POST (deterministic).
    plain = await startRemoteVendor({ tokens: plainTokens, standaloneStream: false });
    streamed = await startRemoteVendor({ tokens: { [TOKEN]: "alice-streamed" } });
    sse = await startRemoteVendor({ tokens: { [TOKEN]: "alice-sse" }, streamable: false, sse: true });
    const svc = (url: string, protocol?: string) => ({
      transport: { type: "http", url, ...(protocol ? { protocol } : {}), credentialHeader: bearer },
      capture: paste,
      tools: { whoami: ["borrowable", "read"] },
    });
    h = await makeHarness({
      registryDoc: {
        services: {
          plain: svc(plain.url, "streamable-http"),
          streamed: svc(streamed.url),
          legacy: svc(sse.sseUrl, "sse"),
          rejecting: svc(plain.url, "streamable-http"),
          broken_cmd: {
            transport: {
              type: "stdio",
              command: "/nonexistent/slaude-vendor-cmd",
              credentialEnv: { TOKEN: "{{token}}" },
            },
            capture: paste,
            tools: { whoami: ["borrowable", "read"] },
          },
        },
      },
    });
  });
  afterAll(async () => {
    await h?.close();
    await Promise.all([plain?.close(), streamed?.close(), sse?.close()]);
  });

  async function setup(service: string, token = TOKEN) {
    const { connection } = await h.connect(ALICE, { service, token });
    const s = await h.session();
    s.turn.user = ALICE;
    const call = () => mcpCall(s.client, { service, tool: "whoami", on_behalf_of: ALICE });
    const listed = async (): Promise<Listed | undefined> => {
      const r = await s.client.callTool({ name: "connections_list", arguments: {} });
      return (r.structuredContent as { connections: Listed[] }).connections.find((c) => c.id === connection.id);
    };
    const describe = async () => {
      const r = await s.client.callTool({ name: "mcp_describe", arguments: { service } });
      const text = (r.content as { text?: string }[]).map((c) => c.text ?? "").join("\n");
      return {
        structured: r.structuredContent as {
          unavailable?: (Listed["unavailable"] & { connectionId: string; kind: string })[];
        },
        text,
      };
    };
    return { connection, call, listed, describe };
  }

  it("Streamable HTTP, restarted behind a proxy: the stale session's 404 fails one call (named, not retried); the next call opens a new session", async () => {
    const { call } = await setup("plain");
    expect((await call()).text.split("\n")[0]).toBe("alice-plain");
    await plain.forgetSessions();
    const ranBefore = plain.calls.length;

    const lost = await call();
    expect(lost.structured.code).toBe("vendor_disconnected");
    expect(lost.text).toContain("session_not_found");
    expect(lost.text).toContain("not retried");
    expect(lost.text).not.toContain("process");
    // Nothing ran on the vendor, and the broker did not retry it behind the agent's back.
    expect(plain.calls.length).toBe(ranBefore);

    for (let i = 0; i < 5; i++) expect((await call()).text.split("\n")[0]).toBe("alice-plain");
    expect(plain.calls.length).toBe(ranBefore + 5);
  });

  it("Streamable HTTP, down then restarted on the same port: a named failure, then backoff visible to the agent, then calls work again", async () => {
    const { connection, call, listed, describe } = await setup("plain");
    expect((await call()).structured.status).toBe("ok");

    await plain.stop();
    const lost = await call();
    expect(lost.structured.code).toBe("vendor_disconnected");
    expect(h.broker.pool.has(connection.id)).toBe(false);

    // The reconnect fails: backoff of 1 min on the broker's clock, with the error class.
    const t1 = h.clock.now();
    const unreachable = await call();
    expect(unreachable.structured.code).toBe("vendor_unreachable");
    expect(unreachable.text).toContain("ECONNREFUSED");
    expect(unreachable.text).toContain(iso(t1 + 60_000));
    const refused = await call();
    expect(refused.structured.code).toBe("vendor_backoff");
    expect(refused.text).toContain("ECONNREFUSED");

    const row = await listed();
    expect(row?.unreachableUntil).toBe(iso(t1 + 60_000));
    expect(row?.unavailable).toEqual({
      reason: "backoff",
      since: iso(t1),
      retryAt: iso(t1 + 60_000),
      failures: 1,
      lastError: "ECONNREFUSED",
    });
    const d = await describe();
    expect(d.structured.unavailable).toEqual([
      {
        kind: "connection",
        connectionId: connection.id,
        reason: "backoff",
        since: iso(t1),
        retryAt: iso(t1 + 60_000),
        failures: 1,
        lastError: "ECONNREFUSED",
      },
    ]);
    expect(d.text).toContain(
      `Connection ${connection.id}: unavailable: connecting failed 1 time(s) (last error ECONNREFUSED)`,
    );

    // Back on the same port; once the backoff is over the next call connects and works.
    await plain.start();
    expect((await call()).structured.code).toBe("vendor_backoff");
    h.clock.advance(60_001);
    const back = await call();
    expect(back.structured.status).toBe("ok");
    expect(back.text.split("\n")[0]).toBe("alice-plain");
    expect((await listed())?.unavailable).toBeUndefined();
    expect((await describe()).structured.unavailable).toBeUndefined();
  });

  it("Streamable HTTP with the standalone stream: after a restart calls succeed (no run of vendor_crashed)", async () => {
    const { connection, call } = await setup("streamed");
    expect((await call()).structured.status).toBe("ok");
    await streamed.stop();
    await streamed.start();
    // The broken stream ends the session without any call: the pool drops it.
    await vi.waitFor(() => expect(h.broker.pool.has(connection.id)).toBe(false), { timeout: 20_000, interval: 50 });
    for (let i = 0; i < 10; i++) {
      const r = await call();
      expect(r.structured.status, JSON.stringify(r.structured)).toBe("ok");
    }
  });

  it("SSE: after a restart on the same port the next calls succeed on a new stream", async () => {
    const { connection, call } = await setup("legacy");
    expect((await call()).text.split("\n")[0]).toBe("alice-sse");
    await sse.stop();
    await sse.start();
    await vi.waitFor(() => expect(h.broker.pool.has(connection.id)).toBe(false), { timeout: 20_000, interval: 50 });
    for (let i = 0; i < 5; i++) {
      const r = await call();
      expect(r.structured.status, JSON.stringify(r.structured)).toBe("ok");
      expect(r.text.split("\n")[0]).toBe("alice-sse");
    }
  });

  it("SSE, down during a call: the call fails vendor_disconnected, then the connect backs off", async () => {
    const { call, listed } = await setup("legacy");
    expect((await call()).structured.status).toBe("ok");
    await sse.stop();
    // Whichever comes first (the stream's end or the POST), the session is dropped and named.
    const first = await call();
    expect(["vendor_disconnected", "vendor_unreachable"]).toContain(first.structured.code);
    const codes = [first.structured.code, (await call()).structured.code];
    expect(codes).toContain("vendor_unreachable");
    expect((await listed())?.unavailable?.reason).toBe("backoff");
    await sse.start();
    h.clock.advance(60_001);
    expect((await call()).structured.status).toBe("ok");
  });

  it("a 401 at connect is a rejected credential: reconnect, not 'cannot be reached', and no backoff", async () => {
    const { call, listed, describe } = await setup("rejecting", "not-a-valid-token");
    const before = plain.requests.length;
    const r = await call();
    expect(r.structured.code).toBe("credential_rejected");
    expect(r.text).toContain("http_401");
    expect(r.text).toContain("connect(rejecting)");
    expect(r.text).not.toContain("cannot be reached");
    expect((await listed())?.unavailable).toMatchObject({ reason: "credential_rejected", lastError: "http_401" });
    expect((await listed())?.unreachableUntil).toBeUndefined();
    expect((await describe()).text).toContain(
      "rejected the stored credential (http_401); reconnect with connect(rejecting)",
    );
    // No backoff: the next call asks the vendor again (a new credential may have come meanwhile).
    const again = await call();
    expect(again.structured.code).toBe("credential_rejected");
    expect(plain.requests.length).toBeGreaterThan(before + 1);
  });

  it("a credential the vendor stops accepting mid-session: credential_rejected, and the session is dropped", async () => {
    plainTokens["revoked-later-token"] = "alice-revoked";
    const { connection, call } = await setup("plain", "revoked-later-token");
    expect((await call()).text.split("\n")[0]).toBe("alice-revoked");
    delete plainTokens["revoked-later-token"];
    const r = await call();
    expect(r.structured.code).toBe("credential_rejected");
    expect(r.text).toContain("http_401");
    await vi.waitFor(() => expect(h.broker.pool.has(connection.id)).toBe(false));
  });

  it("a stdio command that fails to start is named, and visible before the next call", async () => {
    const { connection, call, listed, describe } = await setup("broken_cmd");
    const r = await call();
    expect(r.structured.code).toBe("vendor_start_failed");
    expect(r.text).toContain("ENOENT");
    expect(r.text).not.toContain("restarted on the next call");
    expect((await listed())?.unavailable).toMatchObject({ reason: "start_failed", lastError: "ENOENT" });
    const d = await describe();
    expect(d.structured.unavailable?.[0]).toMatchObject({
      connectionId: connection.id,
      reason: "start_failed",
      lastError: "ENOENT",
    });
    expect(d.text).toContain("its command failed to start (ENOENT)");
  });
});
