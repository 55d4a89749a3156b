import { Client, InMemoryTransport, type JSONRPCMessage, SdkError } from "@modelcontextprotocol/client";
import { afterEach, describe, expect, it, vi } from "vitest";
import { VendorClient } from "../../src/pool/era.js";

// The client the broker speaks to vendors with validates a tools/call result once, with the era
// codec's own schema given up front, instead of the SDK's probe (a failing validation of
// `undefined` on every call) followed by the real one. Outcomes are the plain client's, exactly.

afterEach(() => vi.restoreAllMocks());

/** A real SDK client connected to a scripted vendor that answers tools/call with `result`. */
async function connect(make: () => Client, result: unknown): Promise<Client> {
  const [a, b] = InMemoryTransport.createLinkedPair();
  b.onmessage = (m: JSONRPCMessage) => {
    if (!("method" in m) || !("id" in m)) return;
    const answer =
      m.method === "initialize"
        ? { protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name: "scripted", version: "1" } }
        : m.method === "tools/list"
          ? { tools: [{ name: "t", inputSchema: { type: "object" } }] }
          : result;
    void b.send({ jsonrpc: "2.0", id: m.id, result: answer } as JSONRPCMessage);
  };
  await b.start();
  const client = make();
  await client.connect(a);
  return client;
}

/** The codec the client validates tools/call results with, spied on. */
function spyCodec(client: Client) {
  const codec = (
    client as unknown as { _wireCodec(): { validateResult(m: string, v: unknown): unknown } }
  )._wireCodec();
  return vi.spyOn(codec, "validateResult");
}

const plain = () => new Client({ name: "plain", version: "1" });
const vendor = () => new VendorClient({ name: "vendor", version: "1" });

describe("VendorClient", () => {
  it("validates a tools/call result once, where the plain client validates `undefined` first", async () => {
    const good = { content: [{ type: "text", text: "hi" }] };
    for (const [make, calls] of [
      [plain, [undefined, good]],
      [vendor, [good]],
    ] as const) {
      const client = await connect(make, good);
      const spy = spyCodec(client);
      expect(await client.callTool({ name: "t", arguments: {} })).toEqual(good);
      expect(spy.mock.calls.filter(([m]) => m === "tools/call").map(([, v]) => v)).toEqual(calls);
      spy.mockRestore();
      await client.close();
    }
  });

  it("refuses a malformed result with the plain client's error, and other requests are untouched", async () => {
    const errors: unknown[] = [];
    for (const make of [plain, vendor]) {
      const client = await connect(make, { content: "not a list" });
      errors.push(await client.callTool({ name: "t", arguments: {} }).catch((e: unknown) => e));
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["t"]);
      await client.close();
    }
    const [a, b] = errors;
    expect(a).toBeInstanceOf(SdkError);
    expect(b).toBeInstanceOf(SdkError);
    expect({ code: (b as SdkError).code, message: (b as Error).message }).toEqual({
      code: (a as SdkError).code,
      message: (a as Error).message,
    });
  });
});
