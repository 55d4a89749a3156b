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
