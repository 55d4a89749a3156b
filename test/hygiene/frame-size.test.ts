import type { CallToolResult } from "@modelcontextprotocol/client";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { cleanResult } from "../../src/broker/result-hygiene.js";
import { jsonBytes } from "../../src/hygiene/measure.js";
import { REDACTED, Redactor } from "../../src/hygiene/redact.js";
import { redactToolResult } from "../../src/hygiene/redact-result.js";
import { FRAME_META, FrameReader } from "../../src/pool/frame-reader.js";

// Result hygiene takes a result's size from the stdout line the reader already counted (issue 25
// item 7), and redaction is copy-on-write, so a result nothing was redacted from is known to be the
// very one the client validated. Neither weakens redaction or the size cap.

afterEach(() => vi.restoreAllMocks());

const SECRET = `tok_${"k".repeat(28)}`;
const redactor = new Redactor([SECRET], [`Bearer ${SECRET}`]);

/** `result` as a stdio vendor sends it, read by the broker's reader; and the size of its line. */
function read(result: object): { result: CallToolResult; line: number } {
  const line = JSON.stringify({ result, jsonrpc: "2.0", id: 7 });
  let out: CallToolResult | undefined;
  new FrameReader(64 * 1024 * 1024).push(Buffer.from(`${line}\n`), (f) => {
    if (f.kind === "message" && "result" in f.message) out = f.message.result as CallToolResult;
  });
  if (!out) throw new Error("expected a result");
  return { result: out, line: Buffer.byteLength(line) };
}

describe("the size from the frame", () => {
  it("a 5 MB result read from its line is measured by the reader's count: nothing is serialised", () => {
    const text = `${"lorem ipsum dolor sit amet\n".repeat(1_000)}Bearer ${SECRET}\n`.repeat(190);
    const { result, line } = read({ content: [{ type: "text", text }] });
    const stringify = vi.spyOn(JSON, "stringify");
    const out = cleanResult(result, redactor, { maxBytes: 50_000, maxLines: 2_000 });
    expect(stringify).not.toHaveBeenCalled();
    expect(out.bytes).toBe(line);
    expect(out.truncated).toBe(true);
    const shown = (out.result.content[0] as { text: string }).text;
    expect(shown).not.toContain(SECRET);
    expect(shown).toContain(REDACTED);
    expect(shown).toContain(`result truncated: ${line} bytes exceeded the limit of 50000 bytes`);
    expect(out.full?.()).not.toContain(SECRET);
  });

  it("a small clean result passes as received: its own content, not a copy, and its line's size", () => {
    const { result, line } = read({ content: [{ type: "text", text: "hello" }], structuredContent: { a: [1, "b"] } });
    const out = cleanResult(result, redactor, { maxBytes: 50_000, maxLines: 2_000 });
    expect(out).toMatchObject({ truncated: false, bytes: line, asReceived: true });
    expect(out.result.content[0]).toBe(result.content[0]);
    expect(out.result.structuredContent).toBe(result.structuredContent);
    expect(out.result._meta).toBeUndefined();
  });

  it("a line within the limit whose redaction grows past it is still cut (the frame is not trusted then)", () => {
    const short = new Redactor(["abcd"]);
    // Every "abcd" becomes "[redacted]": the structured content grows from its 137-byte line to over 150 bytes.
    const { result, line } = read({ content: [], structuredContent: { s: "abcd ".repeat(12) } });
    expect(line).toBeLessThanOrEqual(150);
    const out = cleanResult(result, short, { maxBytes: 150, maxLines: 50 });
    expect(out.truncated).toBe(true);
    expect(out.asReceived).toBe(false);
    expect(JSON.stringify(out.result)).not.toContain("abcd");
  });

  it("a result no reader counted (a remote vendor's, or one whose mark is forged JSON) is measured", () => {
    const result = {
      content: [{ type: "text" as const, text: "x".repeat(300) }],
      _meta: { [FRAME_META]: { bytes: 1 } },
    };
    const out = cleanResult(result, redactor, { maxBytes: 50_000, maxLines: 2_000 });
    expect(out.bytes).toBe(jsonBytes({ content: result.content }));
    const cut = cleanResult(result, redactor, { maxBytes: 200, maxLines: 2_000 });
    expect(cut.truncated).toBe(true);
  });
});

describe("copy-on-write redaction", () => {
  // As a result arrives: parsed JSON (fast-check's own values may hold null-prototype objects, which no parse makes).
  const json = fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);
  const secretish = fc.constantFrom(SECRET, Buffer.from(SECRET).toString("base64"), `Bearer ${SECRET}`, "plain");

  it("kept() equals deep(), and is the value itself exactly when deep() changes nothing", () => {
    fc.assert(
      fc.property(json, secretish, (v, s) => {
        const value = { v, [s]: [s, { s }], n: 1 };
        for (const x of [v, value]) {
          const kept = redactor.kept(x);
          const deep = redactor.deep(x);
          expect(kept).toEqual(deep);
          expect(kept === x).toBe(JSON.stringify(deep) === JSON.stringify(x));
        }
      }),
      { numRuns: 200 },
    );
  });

  it("a secret anywhere in a result (text, key, blob, structured content) marks it altered and is gone", () => {
    const blob = Buffer.from(`x${SECRET}y`).toString("base64");
    const cases: CallToolResult[] = [
      { content: [{ type: "text", text: `a ${SECRET} b` }] },
      { content: [{ type: "image", data: blob, mimeType: "image/png" }] },
      { content: [{ type: "resource", resource: { uri: "file:///a", blob } }] },
      { content: [], structuredContent: { [SECRET]: 1 } },
    ];
    for (const c of cases) {
      const out = redactToolResult(c, redactor);
      expect(out.altered).toBe(true);
      expect(redactor.leaks(JSON.stringify(out))).toBe(false);
      expect(JSON.stringify(out)).not.toContain(blob);
    }
    const clean: CallToolResult = {
      content: [{ type: "image", data: Buffer.from("png").toString("base64"), mimeType: "image/png" }],
    };
    const out = redactToolResult(clean, redactor);
    expect(out.altered).toBe(false);
    expect(out.content[0]).toBe(clean.content[0]);
  });
});
