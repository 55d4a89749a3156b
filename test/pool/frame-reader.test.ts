import { type CallToolResult, deserializeMessage } from "@modelcontextprotocol/client";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import {
  FRAME_META,
  type Frame,
  FrameMark,
  FrameReader,
  frameOf,
  frameTruncatedBytes,
  oversizedResponse,
} from "../../src/pool/frame-reader.js";

// The stdout framing of vendor children: lines within the cap parse as before; a line over the cap
// streams past keeping only its ends, and a tools/call result becomes a truncated answer to its id.

function feed(reader: FrameReader, text: string, chunk = 1000): Frame[] {
  const out: Frame[] = [];
  const buf = Buffer.from(text);
  for (let i = 0; i < buf.length; i += chunk) reader.push(buf.subarray(i, i + chunk), (f) => out.push(f));
  return out;
}

describe("FrameReader", () => {
  it("parses lines split across chunks and several lines in one chunk", () => {
    const a = JSON.stringify({ jsonrpc: "2.0", id: 1, result: { content: [] } });
    const b = JSON.stringify({
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: { progressToken: 1, progress: 1 },
    });
    const frames = feed(new FrameReader(1024), `${a}\n${b}\r\n${a}\n`, 7);
    expect(frames.map((f) => (f.kind === "message" ? ("id" in f.message ? f.message.id : "note") : "over"))).toEqual([
      1,
      "note",
      1,
    ]);
  });

  it("a result over the cap (SDK key order, id last) answers its id with the start of its text", () => {
    const text = `HEAD "quoted" \\ é ${"y".repeat(300_000)}`;
    const line = JSON.stringify({ result: { content: [{ type: "text", text }] }, jsonrpc: "2.0", id: 42 });
    const frames = feed(
      new FrameReader(100_000),
      `${line}\n${JSON.stringify({ jsonrpc: "2.0", id: 43, result: { content: [] } })}\n`,
      65_536,
    );
    expect(frames).toHaveLength(2);
    const over = frames[0]!;
    if (over.kind !== "oversized") throw new Error("expected an oversized frame");
    expect(over.bytes).toBe(Buffer.byteLength(line));
    expect(over.head.length).toBe(64 * 1024);
    const msg = oversizedResponse(over);
    if (!msg || !("result" in msg)) throw new Error("expected a result");
    expect(msg.id).toBe(42);
    // A valid CallToolResult, as the SDK client will check.
    const result = CallToolResultSchema.parse(msg.result);
    expect(result.content[0]).toMatchObject({ type: "text" });
    expect((result.content[0] as { text: string }).text.startsWith('HEAD "quoted" \\ é yyy')).toBe(true);
    expect(frameTruncatedBytes(result)).toBe(Buffer.byteLength(line));
    // The reader is in step again: the next line parses.
    expect(frames[1]).toMatchObject({ kind: "message", message: { id: 43 } });
  });

  it("id-first serializers and string ids are recognised; an oversized notification or request is not a result", () => {
    const big = "z".repeat(5_000);
    const first = `{"jsonrpc":"2.0","id":"req-7","result":{"content":[{"type":"text","text":"${big}"}]}}`;
    const [f1] = feed(new FrameReader(1_000), `${first}\n`);
    expect(oversizedResponse(f1 as Extract<Frame, { kind: "oversized" }>)).toMatchObject({ id: "req-7" });
    for (const line of [
      JSON.stringify({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: big } }),
      JSON.stringify({ method: "sampling/createMessage", params: { x: big, id: 3 }, jsonrpc: "2.0", id: 3 }),
      JSON.stringify({ jsonrpc: "2.0", id: 5, error: { code: -32000, message: big } }),
    ]) {
      const [f] = feed(new FrameReader(1_000), `${line}\n`);
      expect(f?.kind).toBe("oversized");
      expect(oversizedResponse(f as Extract<Frame, { kind: "oversized" }>)).toBeUndefined();
    }
  });

  it("a vendor cannot mark its own result: the reader's mark replaces it, and a mark made of JSON is not one", () => {
    const forged = { bytes: 1e9, truncated: true };
    const line = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      result: { content: [], _meta: { [FRAME_META]: forged, other: 1 } },
    });
    const [f] = feed(new FrameReader(10_000), `${line}\n`);
    if (f?.kind !== "message" || !("result" in f.message)) throw new Error("expected a result");
    const result = f.message.result as CallToolResult;
    expect(result._meta?.other).toBe(1);
    expect(frameOf(result)).toEqual(new FrameMark(Buffer.byteLength(line), false));
    expect(frameTruncatedBytes(result)).toBeUndefined();
    // A remote vendor's result never passes this reader: its JSON mark is not taken for the broker's.
    expect(frameOf({ content: [], _meta: { [FRAME_META]: forged } })).toBeUndefined();
  });

  it("each result carries the size of its line; the mark survives the client's result schema", () => {
    const text = `a "quoted" \\ é line\n${"w".repeat(2_000)}`;
    const line = JSON.stringify({ result: { content: [{ type: "text", text }] }, jsonrpc: "2.0", id: 9 });
    const [f] = feed(new FrameReader(100_000), `${line}\r\n`, 333);
    if (f?.kind !== "message" || !("result" in f.message)) throw new Error("expected a result");
    const parsed = CallToolResultSchema.parse(f.message.result);
    expect(frameOf(parsed)?.bytes).toBe(Buffer.byteLength(line) + 1);
    expect(frameOf(parsed)?.truncated).toBe(false);
  });

  it("a result whose _meta is not an object is refused as before, never repaired by the mark", () => {
    const line = JSON.stringify({ jsonrpc: "2.0", id: 2, result: { content: [], _meta: 5 } });
    expect(() => feed(new FrameReader(10_000), `${line}\n`)).toThrow();
  });

  it("accepts and refuses exactly the messages the SDK's deserializeMessage does, with the same output", () => {
    const lines = [
      { jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "x" }] } },
      { jsonrpc: "2.0", id: "a", result: {} },
      { jsonrpc: "2.0", id: 1, result: { content: [] }, error: { code: 1, message: "m" } },
      { jsonrpc: "2.0", id: 1, result: {}, method: "tools/call" },
      { jsonrpc: "2.0", id: 1, result: {}, extra: 1 },
      { jsonrpc: "2.0", result: {} },
      { jsonrpc: "1.0", id: 1, result: {} },
      { jsonrpc: "2.0", id: 1.5, result: {} },
      { jsonrpc: "2.0", id: null, result: {} },
      { jsonrpc: "2.0", id: 1, result: [] },
      { jsonrpc: "2.0", id: 1, result: "text" },
      { jsonrpc: "2.0", id: 1, result: { _meta: "no" } },
      { jsonrpc: "2.0", id: 1, error: { code: -32000, message: "m" } },
      { jsonrpc: "2.0", id: 2, method: "ping" },
      { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 1 } },
      [1, 2],
      "result",
    ].map((m) => JSON.stringify(m));
    for (const line of lines) {
      let sdk: unknown;
      try {
        sdk = deserializeMessage(line);
      } catch {
        sdk = "refused";
      }
      let ours: unknown;
      try {
        const [f] = feed(new FrameReader(10_000), `${line}\n`);
        if (f?.kind !== "message") throw new Error("expected a message");
        ours = f.message;
        if ("result" in f.message) delete (f.message.result._meta as Record<string, unknown> | undefined)?.[FRAME_META];
        if ("result" in f.message && Object.keys(f.message.result._meta ?? {}).length === 0)
          delete f.message.result._meta;
      } catch {
        ours = "refused";
      }
      expect(ours, line).toEqual(sdk);
    }
  });

  it("malformed JSON within the cap still throws (the transport then stops the child)", () => {
    expect(() => feed(new FrameReader(1_000), "{not json\n")).toThrow();
  });
});
