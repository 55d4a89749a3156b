import type http from "node:http";
import { PROTOCOL_VERSION_META_KEY } from "@modelcontextprotocol/server";
import { describe, expect, it } from "vitest";
import { classifiedLegacy, isLegacyMessage, plainLegacyShape } from "../../src/server/mcp-modern.js";

// isLegacyMessage answers the common 2025 request without the SDK classifier's response schemas; this compares its
// verdict with the classifier's own over every combination of body shape and era header below.

const request = (headers: Record<string, string | string[]>) =>
  ({ method: "POST", headers }) as unknown as http.IncomingMessage;

const claim = (version: unknown) => ({ [PROTOCOL_VERSION_META_KEY]: version });
const modernMeta = {
  ...claim("2026-07-28"),
  "io.modelcontextprotocol/clientCapabilities": {},
  "io.modelcontextprotocol/clientInfo": { name: "c", version: "1" },
};

const bodies: Record<string, unknown> = {
  initialize: {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "c", version: "1" } },
  },
  "initialize with a modern claim": { jsonrpc: "2.0", id: 1, method: "initialize", params: { _meta: modernMeta } },
  "tools/call": { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "mcp_call", arguments: { a: 1 } } },
  "tools/call, string id, _meta progress": {
    jsonrpc: "2.0",
    id: "x",
    method: "tools/call",
    params: { name: "t", _meta: { progressToken: 3 } },
  },
  "tools/call with a modern envelope": {
    jsonrpc: "2.0",
    id: 7,
    method: "tools/call",
    params: { name: "t", _meta: modernMeta },
  },
  "tools/call with a bad claim": { jsonrpc: "2.0", id: 7, method: "tools/call", params: { _meta: claim(5) } },
  "tools/list, no params": { jsonrpc: "2.0", id: 2, method: "tools/list" },
  "params an array": { jsonrpc: "2.0", id: 2, method: "tools/list", params: [1, 2] },
  "params null": { jsonrpc: "2.0", id: 2, method: "tools/list", params: null },
  "_meta null": { jsonrpc: "2.0", id: 2, method: "tools/list", params: { _meta: null } },
  "_meta an array": { jsonrpc: "2.0", id: 2, method: "tools/list", params: { _meta: [] } },
  notification: { jsonrpc: "2.0", method: "notifications/initialized" },
  "notification with a claim": {
    jsonrpc: "2.0",
    method: "notifications/cancelled",
    params: { _meta: claim("2026-07-28"), requestId: 1 },
  },
  "result response": { jsonrpc: "2.0", id: 3, result: {} },
  "error response": { jsonrpc: "2.0", id: 3, error: { code: -32600, message: "x" } },
  "request with a result key": { jsonrpc: "2.0", id: 3, method: "ping", result: {} },
  "request with an extra key": { jsonrpc: "2.0", id: 3, method: "ping", extra: true },
  "wrong jsonrpc": { jsonrpc: "1.0", id: 3, method: "ping" },
  "id null": { jsonrpc: "2.0", id: null, method: "ping" },
  "id an object": { jsonrpc: "2.0", id: {}, method: "ping" },
  "method a number": { jsonrpc: "2.0", id: 1, method: 5 },
  "empty object": {},
  "id 1.5": { jsonrpc: "2.0", id: 1.5, method: "ping" },
  "id past 2^53": { jsonrpc: "2.0", id: 2 ** 60, method: "ping" },
  "id -1": { jsonrpc: "2.0", id: -1, method: "ping" },
  "id empty string": { jsonrpc: "2.0", id: "", method: "ping" },
  "no id, no method": { jsonrpc: "2.0" },
  "method empty": { jsonrpc: "2.0", id: 1, method: "" },
  "params empty": { jsonrpc: "2.0", id: 1, method: "ping", params: {} },
  "_meta with a bad progress token": {
    jsonrpc: "2.0",
    id: 1,
    method: "ping",
    params: { _meta: { progressToken: {} } },
  },
  "own __proto__ key": JSON.parse('{"jsonrpc":"2.0","id":1,"method":"ping","__proto__":{"x":1}}'),
  "inherited keys": Object.assign(Object.create({ jsonrpc: "2.0" }), { id: 1, method: "ping" }),
  batch: [{ jsonrpc: "2.0", id: 1, method: "ping" }],
  "empty batch": [],
  "a string": "ping",
  "a number": 1,
  null: null,
};

const versionHeaders: Array<string | string[] | undefined> = [
  undefined,
  "2025-06-18",
  "2025-11-25",
  "2026-07-28",
  " 2026-07-28",
  "2025-06-18 ",
  "2027-01-01",
  "2025-06-18, 2026-07-28",
  ["2025-06-18", "2025-06-18"],
  "garbage",
  "",
];
const methodHeaders: Array<string | undefined> = [undefined, "tools/call", "initialize"];

describe("2025/2026 era routing (isLegacyMessage)", () => {
  it("agrees with the SDK's classifier on every body shape, era header and method header", () => {
    let compared = 0;
    for (const [name, body] of Object.entries(bodies)) {
      for (const version of versionHeaders) {
        for (const method of methodHeaders) {
          const headers: Record<string, string | string[]> = {};
          if (version !== undefined) headers["mcp-protocol-version"] = version;
          if (method !== undefined) headers["mcp-method"] = method;
          const req = request(headers);
          const label = `${name} / ${JSON.stringify(version)} / ${method}`;
          expect(isLegacyMessage(req, body), label).toBe(classifiedLegacy(req, body));
          compared++;
        }
      }
    }
    expect(compared).toBe(Object.keys(bodies).length * versionHeaders.length * methodHeaders.length);
  });

  it("takes the short path for the usual 2025 request and the full one for anything that could be modern", () => {
    expect(plainLegacyShape(bodies["tools/call"], "2025-06-18")).toBe(true);
    expect(plainLegacyShape(bodies["tools/call"], undefined)).toBe(true);
    expect(plainLegacyShape(bodies.notification, "2025-11-25")).toBe(true);
    expect(plainLegacyShape(bodies["tools/call with a modern envelope"], undefined)).toBe(false);
    expect(plainLegacyShape(bodies["tools/call"], "2026-07-28")).toBe(false);
    expect(plainLegacyShape(bodies["tools/call"], " 2025-06-18")).toBe(false);
    expect(plainLegacyShape(bodies["result response"], undefined)).toBe(false);
    expect(plainLegacyShape(bodies.batch, undefined)).toBe(false);
  });

  it("routes body-less and non-POST requests to the 2025 era", () => {
    expect(isLegacyMessage({ method: "GET", headers: {} } as unknown as http.IncomingMessage, undefined)).toBe(true);
    expect(isLegacyMessage(request({}), undefined)).toBe(true);
  });
});
