import { SdkErrorCode, SdkHttpError } from "@modelcontextprotocol/client";
import { afterEach, describe, expect, it, vi } from "vitest";
import { connectRemote, failureClass, httpStatusOf, type RemoteSession } from "../../src/pool/remote.js";
import { type RemoteVendor, startRemoteVendor } from "../fixtures/remote-vendor.js";

// A remote vendor's session and how it is lost, against a real MCP server on loopback that is
// stopped and started again on the same port: the SDK's transports keep the dead session (a POST
// that gets 404 or a refused connection reports no close); the watched transport names the
// failure and closes, so the pool can drop the client. Streamable HTTP and the legacy SSE transport.

const TOKEN = "remote-session-token";
const headers = { Authorization: `Bearer ${TOKEN}` };
const vendors: RemoteVendor[] = [];
const sessions: RemoteSession[] = [];

async function vendor(
  o: { standaloneStream?: boolean; sse?: boolean; streamable?: boolean } = {},
): Promise<RemoteVendor> {
  const v = await startRemoteVendor({ tokens: { [TOKEN]: "alice" }, ...o });
  vendors.push(v);
  return v;
}

async function open(
  url: string,
  protocol: "streamable-http" | "sse" | "auto" = "streamable-http",
  h: Record<string, string> = headers,
): Promise<RemoteSession & { closed: Promise<void> }> {
  const s = await connectRemote({ url: new URL(url), protocol, headers: h, initializeTimeoutMs: 10_000 });
  sessions.push(s);
  const closed = new Promise<void>((r) => (s.client.onclose = r));
  return { ...s, closed };
}

const whoami = (s: RemoteSession) => s.client.callTool({ name: "whoami", arguments: {} });

afterEach(async () => {
  for (const s of sessions.splice(0)) await s.client.close().catch(() => {});
  for (const v of vendors.splice(0)) await v.close();
});

describe("remote sessions (real server on loopback)", () => {
  it("Streamable HTTP: a server that forgot the session answers 404, named session_not_found, and the client closes", async () => {
    const v = await vendor({ standaloneStream: false });
    const s = await open(v.url);
    expect((await whoami(s)).content).toEqual([{ type: "text", text: "alice" }]);
    expect(s.lostReason()).toBeUndefined();

    // Restarted behind a proxy: the client's connection stays open, its session id is unknown.
    await v.forgetSessions();
    await expect(whoami(s)).rejects.toThrow();
    expect(s.lostReason()).toBe("session_not_found");
    // The SDK alone never reports close here: the watched transport does, so the pool drops the client.
    await s.closed;
    expect(v.calls).toEqual(["whoami"]);

    // A new session to the same server works at once.
    const fresh = await open(v.url);
    expect((await whoami(fresh)).content).toEqual([{ type: "text", text: "alice" }]);
  });

  it("Streamable HTTP: a server that is down fails the call with the socket error, and the client closes", async () => {
    const v = await vendor({ standaloneStream: false });
    const s = await open(v.url);
    await whoami(s);
    await v.stop();
    await expect(whoami(s)).rejects.toThrow();
    // Refused, or the kept-alive socket the server closed: either way a socket error class.
    expect(s.lostReason()).toMatch(/^(ECONNREFUSED|UND_ERR_SOCKET|ECONNRESET)$/);
    await s.closed;
  });

  it("Streamable HTTP: after a restart on the same port the first call fails and closes the client; a new session works", async () => {
    const v = await vendor({ standaloneStream: false });
    const s = await open(v.url);
    await whoami(s);
    await v.stop();
    await v.start();
    await expect(whoami(s)).rejects.toThrow();
    // A stale keep-alive socket or the forgotten session's 404, depending on who sees the close first.
    expect(s.lostReason()).toMatch(/^(session_not_found|UND_ERR_SOCKET|ECONNRESET)$/);
    await s.closed;
    const fresh = await open(v.url);
    expect((await whoami(fresh)).content).toEqual([{ type: "text", text: "alice" }]);
  });

  it("Streamable HTTP with the standalone stream: the restart is noticed without any call", async () => {
    const v = await vendor();
    const s = await open(v.url);
    await whoami(s);
    await v.stop();
    await v.start();
    // The SDK re-opens its GET stream (about a second later) with the old session id: 404.
    await vi.waitFor(() => expect(s.lostReason()).toBeDefined(), { timeout: 20_000, interval: 50 });
    await s.closed;
  });

  it("SSE: the stream ending with the server closes the session without any call", async () => {
    const v = await vendor({ streamable: false, sse: true });
    const s = await open(v.sseUrl, "sse");
    expect((await whoami(s)).content).toEqual([{ type: "text", text: "alice" }]);
    await v.stop();
    await v.start();
    await vi.waitFor(() => expect(s.lostReason()).toBeDefined(), { timeout: 20_000, interval: 50 });
    await s.closed;
    const fresh = await open(v.sseUrl, "sse");
    expect((await whoami(fresh)).content).toEqual([{ type: "text", text: "alice" }]);
  });

  it("a 401 at connect carries its status, for Streamable HTTP and for SSE", async () => {
    const v = await vendor({ sse: true });
    const wrong = { Authorization: "Bearer not-a-token" };
    const e1 = await connectRemote({
      url: new URL(v.url),
      protocol: "streamable-http",
      headers: wrong,
      initializeTimeoutMs: 10_000,
    }).catch((e: unknown) => e);
    expect(httpStatusOf(e1)).toBe(401);
    expect(failureClass(e1)).toBe("http_401");
    const e2 = await connectRemote({
      url: new URL(v.sseUrl),
      protocol: "sse",
      headers: wrong,
      initializeTimeoutMs: 10_000,
    }).catch((e: unknown) => e);
    expect(httpStatusOf(e2)).toBe(401);
  });

  it("failure classes carry no vendor text", () => {
    const body = "secret-looking body text";
    expect(
      failureClass(
        new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, `Error POSTing to endpoint: ${body}`, {
          status: 503,
          text: body,
        }),
      ),
    ).toBe("http_503");
    expect(failureClass(new Error(`Error POSTing to endpoint (HTTP 404): ${body}`))).toBe("session_not_found");
    expect(
      failureClass(new TypeError("fetch failed", { cause: Object.assign(new Error(body), { code: "ECONNRESET" }) })),
    ).toBe("ECONNRESET");
    expect(failureClass(new Error(body))).toBe("transport_error");
  });
});
