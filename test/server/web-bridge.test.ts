import type http from "node:http";
import { describe, expect, it } from "vitest";
import { toWebRequest } from "../../src/server/web-bridge.js";

const incoming = (url: string, rawHeaders: string[]) =>
  ({ method: "POST", url, rawHeaders }) as unknown as http.IncomingMessage;

describe("toWebRequest", () => {
  it("carries every header, repeated ones joined, names case-insensitive", () => {
    const r = toWebRequest(
      incoming("/mcp?x=1", ["Host", "127.0.0.1:1", "Mcp-Session-Id", "s1", "Accept", "a/b", "accept", "c/d"]),
    );
    expect(r.headers.get("mcp-session-id")).toBe("s1");
    expect(r.headers.get("accept")).toBe("a/b, c/d");
    expect(r.method).toBe("POST");
    expect(new URL(r.url).pathname).toBe("/mcp");
    expect(new URL(r.url).search).toBe("?x=1");
  });

  it("keeps the fixed origin and the path whatever form the request line takes", () => {
    for (const [target, path] of [
      ["/mcp", "/mcp"],
      ["//evil.example/mcp", "/mcp"],
      ["http://evil.example/mcp?a=b", "/mcp?a=b"],
    ] as const) {
      const u = new URL(toWebRequest(incoming(target, [])).url);
      expect(u.host, target).toBe("slaude-connect.invalid");
      expect(`${u.pathname}${u.search}`, target).toBe(path);
    }
  });
});

/** What toWebRequest gave before it answered from the node request: a real undici Request. */
function realRequest(url: string, rawHeaders: string[], signal?: AbortSignal): Request {
  const headers = new Headers();
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) headers.append(rawHeaders[i]!, rawHeaders[i + 1]!);
  return new Request(`http://slaude-connect.invalid${url}`, { method: "POST", headers, ...(signal ? { signal } : {}) });
}

describe("toWebRequest answers as a real Request would", () => {
  const raw = [
    "Host",
    "127.0.0.1:1",
    "Accept",
    "application/json",
    "accept",
    "text/event-stream",
    "Content-Type",
    "application/json",
    "MCP-Protocol-Version",
    "2025-11-25",
    "X-Slaude-Turn",
    "turn_1",
    "Set-Cookie",
    "a=1",
    "set-cookie",
    "b=2",
  ];

  it("is a Request, with the same method, URL, headers and iteration", () => {
    const mine = toWebRequest(incoming("/mcp?q=1", raw));
    const real = realRequest("/mcp?q=1", raw);
    expect(mine).toBeInstanceOf(Request);
    expect(Object.prototype.toString.call(mine)).toBe("[object Request]");
    expect(mine.method).toBe(real.method);
    expect(mine.url).toBe(real.url);
    for (const name of [
      "accept",
      "ACCEPT",
      "content-type",
      "mcp-protocol-version",
      "x-slaude-turn",
      "set-cookie",
      "nope",
    ]) {
      expect(mine.headers.get(name), name).toBe(real.headers.get(name));
      expect(mine.headers.has(name), name).toBe(real.headers.has(name));
    }
    expect([...mine.headers]).toEqual([...real.headers]);
    expect([...mine.headers.keys()]).toEqual([...real.headers.keys()]);
    expect([...mine.headers.values()]).toEqual([...real.headers.values()]);
    expect(mine.headers.getSetCookie()).toEqual(real.headers.getSetCookie());
    const seen: string[] = [];
    mine.headers.forEach((v, k) => {
      seen.push(`${k}=${v}`);
    });
    const expected: string[] = [];
    real.headers.forEach((v, k) => {
      expected.push(`${k}=${v}`);
    });
    expect(seen).toEqual(expected);
    expect(new Headers(mine.headers).get("accept")).toBe("application/json, text/event-stream");
  });

  it("answers every other member from a real body-less Request", async () => {
    const mine = toWebRequest(incoming("/mcp", raw));
    const real = realRequest("/mcp", raw);
    for (const key of [
      "body",
      "bodyUsed",
      "cache",
      "credentials",
      "mode",
      "redirect",
      "referrer",
      "keepalive",
      "duplex",
    ]) {
      expect(Reflect.get(mine, key), key).toEqual(Reflect.get(real, key));
    }
    expect(await mine.text()).toBe("");
    const copy = mine.clone();
    expect(copy).toBeInstanceOf(Request);
    expect(copy.headers.get("x-slaude-turn")).toBe("turn_1");
  });

  it("refuses writes to its headers with a clear error", () => {
    const h = toWebRequest(incoming("/mcp", raw)).headers;
    expect(() => h.set("accept", "x")).toThrow(/read-only/);
    expect(() => h.append("accept", "x")).toThrow(/read-only/);
    expect(() => h.delete("accept")).toThrow(/read-only/);
    expect(h.get("accept")).toBe("application/json, text/event-stream");
  });

  it("hands on the given signal: aborting it aborts the request's, and the real members follow it too", () => {
    const gone = new AbortController();
    const mine = toWebRequest(incoming("/mcp", raw), { signal: gone.signal });
    const copy = mine.clone();
    expect(mine.signal.aborted).toBe(false);
    gone.abort();
    expect(mine.signal.aborted).toBe(true);
    expect(copy.signal.aborted).toBe(true);
  });

  it("carries the request's own id as X-Request-Id in place of the client's", () => {
    const theirs = ["X-Request-Id", "client id", "x-request-id", "again", "Accept", "a/b"];
    const mine = toWebRequest(incoming("/mcp", theirs), { requestId: "req_1" });
    expect(mine.headers.get("x-request-id")).toBe("req_1");
    expect(mine.headers.get("accept")).toBe("a/b");
    expect([...mine.headers.keys()]).toEqual(["accept", "x-request-id"]);
    expect(toWebRequest(incoming("/mcp", theirs)).headers.get("x-request-id")).toBe("client id, again");
  });

  it("has a signal that never aborts when none is given", () => {
    const mine = toWebRequest(incoming("/mcp", raw));
    expect(mine.signal).toBeInstanceOf(AbortSignal);
    expect(mine.signal.aborted).toBe(false);
  });
});
