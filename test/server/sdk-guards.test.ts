import { createRequire } from "node:module";
import * as clientEsm from "@modelcontextprotocol/client";
import {
  InitializeRequestSchema,
  JSONRPCErrorResponseSchema,
  JSONRPCNotificationSchema,
  JSONRPCRequestSchema,
  JSONRPCResultResponseSchema,
} from "@modelcontextprotocol/core";
import * as serverEsm from "@modelcontextprotocol/server";
import { describe, expect, it } from "vitest";

// The MCP SDK's message guards as installed here, with patches/ applied by bin/patch-sdk.js (the
// package's postinstall): each guard first looks at the one key a match needs (`method`, `id`,
// `result`, `error`) and parses only when it is there. This proves the patched guards answer what
// their schemas answer, over every combination of the JSON-RPC keys' shapes below, in both SDK
// packages and both module formats, and that the patch is in place: a message that cannot match
// is turned away after reading that one key (an unpatched guard parses the whole message).

const require = createRequire(import.meta.url);
type Guards = Record<(typeof GUARDS)[number], (v: unknown) => boolean>;
const GUARDS = [
  "isInitializeRequest",
  "isJSONRPCRequest",
  "isJSONRPCNotification",
  "isJSONRPCResultResponse",
  "isJSONRPCErrorResponse",
] as const;
const SCHEMAS: Record<(typeof GUARDS)[number], { safeParse(v: unknown): { success: boolean } }> = {
  isInitializeRequest: InitializeRequestSchema,
  isJSONRPCRequest: JSONRPCRequestSchema,
  isJSONRPCNotification: JSONRPCNotificationSchema,
  isJSONRPCResultResponse: JSONRPCResultResponseSchema,
  isJSONRPCErrorResponse: JSONRPCErrorResponseSchema,
};
const PACKAGES: Record<string, Guards> = {
  "server (ESM)": serverEsm as unknown as Guards,
  "client (ESM)": clientEsm as unknown as Guards,
  "server (CJS)": require("@modelcontextprotocol/server") as Guards,
  "client (CJS)": require("@modelcontextprotocol/client") as Guards,
};

const ABSENT = Symbol("absent");
const initParams = { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "c", version: "1" } };
/** Each key's shapes: absent, valid ones and wrong ones (wrong types, null, undefined, near misses). */
const SHAPES: Record<string, unknown[]> = {
  jsonrpc: [ABSENT, "2.0", "1.0", 2, undefined],
  id: [ABSENT, 1, "a", 1.5, null, undefined, {}],
  method: [ABSENT, "initialize", "tools/call", "", 5, null, undefined],
  params: [ABSENT, {}, initParams, { ...initParams, protocolVersion: 5 }, null, []],
  result: [ABSENT, {}, { content: [] }, null, 5, undefined],
  error: [ABSENT, { code: 1, message: "m" }, { code: 1.5, message: "m" }, { code: 1 }, null],
  extra: [ABSENT, 1],
};

function* messages(): Generator<unknown> {
  yield* [null, undefined, 0, 1, "", "initialize", true, [], [{ jsonrpc: "2.0", id: 1, method: "initialize" }]];
  const keys = Object.keys(SHAPES);
  const walk = function* (i: number, acc: Record<string, unknown>): Generator<unknown> {
    if (i === keys.length) {
      yield { ...acc };
      return;
    }
    const key = keys[i]!;
    for (const v of SHAPES[key]!) {
      if (v === ABSENT) yield* walk(i + 1, acc);
      else yield* walk(i + 1, { ...acc, [key]: v });
    }
  };
  yield* walk(0, {});
}

/** The keys a guard reads of `target` (property reads and `in` checks). */
function keysRead(guard: (v: unknown) => boolean, target: object): string[] {
  const read: string[] = [];
  const note = (k: string | symbol) => {
    if (typeof k === "string") read.push(k);
  };
  const proxy = new Proxy(target, {
    get: (t, k, r) => {
      note(k);
      return Reflect.get(t, k, r);
    },
    has: (t, k) => {
      note(k);
      return Reflect.has(t, k);
    },
    ownKeys: (t) => {
      read.push("(keys)");
      return Reflect.ownKeys(t);
    },
  });
  expect(guard(proxy)).toBe(false);
  return read;
}

describe("the MCP SDK's message guards, patched", () => {
  const all = [...messages()];

  for (const [pkg, guards] of Object.entries(PACKAGES))
    it(`${pkg}: every guard answers what its schema answers`, () => {
      for (const name of GUARDS) {
        const guard = guards[name];
        expect(typeof guard, name).toBe("function");
        let matches = 0;
        const differ: unknown[] = [];
        for (const m of all) {
          const verdict = guard(m);
          if (verdict !== SCHEMAS[name].safeParse(m).success) differ.push(m);
          if (verdict) matches++;
        }
        expect(differ, name).toEqual([]);
        // The corpus holds matches for every guard, so agreeing is not only agreeing on "no".
        expect(matches, name).toBeGreaterThan(0);
      }
      expect(all.length).toBeGreaterThan(50_000);
    });

  const request = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "t", arguments: {} } };
  const result = { jsonrpc: "2.0", id: 1, result: { content: [] } };
  for (const [pkg, guards] of Object.entries(PACKAGES))
    it(`${pkg}: a message that cannot match is turned away by the one key it lacks, unparsed`, () => {
      expect(keysRead(guards.isInitializeRequest, request)).toEqual(["method"]);
      expect(keysRead(guards.isJSONRPCResultResponse, request)).toEqual(["result"]);
      expect(keysRead(guards.isJSONRPCErrorResponse, request)).toEqual(["error"]);
      expect(keysRead(guards.isJSONRPCRequest, result)).toEqual(["method"]);
      expect(keysRead(guards.isJSONRPCNotification, result)).toEqual(["method"]);
      // A request's own guard still parses it whole.
      expect(guards.isJSONRPCRequest(request)).toBe(true);
      expect(guards.isJSONRPCResultResponse(result)).toBe(true);
    });
});
