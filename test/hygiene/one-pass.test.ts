import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { cleanResult } from "../../src/broker/result-hygiene.js";
import { countLines, jsonBytes } from "../../src/hygiene/measure.js";
import { REDACTED, Redactor } from "../../src/hygiene/redact.js";
import { truncateText } from "../../src/hygiene/truncate.js";

// Result hygiene in one pass (issue 13 item 4): a large result is redacted by one combined matcher
// and measured without serialising it; what comes out is what the old multi-pass code produced.

afterEach(() => vi.restoreAllMocks());

const LIMITS = { maxBytes: 50_000, maxLines: 2_000 };
const SECRET = `tok_${"q".repeat(28)}`;

/** The cut the old code made (split into lines, then a byte cut): the oracle of truncateText. */
function referenceCut(
  text: string,
  limits: { maxBytes: number; maxLines: number },
): { text: string; truncated: boolean } {
  let out = text;
  let truncated = false;
  const lines = out.split("\n");
  if (lines.length > limits.maxLines) {
    out = lines.slice(0, limits.maxLines).join("\n");
    truncated = true;
  }
  if (Buffer.byteLength(out) > limits.maxBytes) {
    out = Buffer.from(out)
      .subarray(0, limits.maxBytes)
      .toString("utf8")
      .replace(/\uFFFD$/, "");
    truncated = true;
  }
  return { text: out, truncated };
}

// Text with the characters JSON escapes most (newline, tab, quote, backslash) and multi-byte ones.
const textArb = fc
  .array(fc.constantFrom("a", "b", " ", "\n", "\t", "\r", '"', "\\", "é", "€", "😀", "\n\n"), { maxLength: 400 })
  .map((a) => a.join(""));

describe("one-pass result hygiene", () => {
  it("measures a 5 MB result without serialising it whole, and cuts it to the limits with its secret redacted", () => {
    const text = `${"lorem ipsum dolor sit amet\n".repeat(1_000)}Bearer ${SECRET}\n`.repeat(190);
    const stringify = vi.spyOn(JSON, "stringify");
    const out = cleanResult(
      { content: [{ type: "text", text }] },
      new Redactor([SECRET], [`Bearer ${SECRET}`]),
      LIMITS,
    );
    const largest = Math.max(
      0,
      ...stringify.mock.results.map((r) => (typeof r.value === "string" ? r.value.length : 0)),
    );
    expect(largest).toBeLessThan(100_000);
    expect(out.truncated).toBe(true);
    expect(out.bytes).toBe(
      Buffer.byteLength(
        JSON.stringify({ content: [{ type: "text", text: text.split(`Bearer ${SECRET}`).join(REDACTED) }] }),
      ),
    );
    const shown = (out.result.content[0] as { text: string }).text;
    expect(shown).not.toContain(SECRET);
    expect(shown).toContain(REDACTED);
    expect(shown.startsWith(referenceCut(text.split(`Bearer ${SECRET}`).join(REDACTED), LIMITS).text)).toBe(true);
  });

  it("jsonBytes equals the UTF-8 size of JSON.stringify, long strings included", () => {
    fc.assert(
      fc.property(textArb, fc.integer({ min: 1, max: 400 }), (t, times) => {
        const long = t.repeat(Math.ceil(70_000 / Math.max(1, t.length)) * (times % 3));
        const v = {
          content: [
            { type: "text", text: long },
            { type: "text", text: t },
          ],
          structuredContent: { k: t, n: times, long },
        };
        expect(jsonBytes(v)).toBe(Buffer.byteLength(JSON.stringify(v)));
      }),
      { numRuns: 60 },
    );
  });

  it("counts lines as split would and cuts exactly where the old split-and-join cut", () => {
    fc.assert(
      fc.property(
        fc.array(textArb, { maxLength: 4 }),
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 0, max: 300 }),
        (texts, maxLines, maxBytes) => {
          expect(countLines(texts)).toBe(texts.reduce((n, t) => n + t.split("\n").length, 0));
          const joined = texts.join("\n");
          expect(truncateText(joined, { maxLines, maxBytes })).toEqual(referenceCut(joined, { maxLines, maxBytes }));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("the combined matcher leaves no credential form behind, overlapping forms included", () => {
    const r = new Redactor([SECRET, "abcd1234"], [`Bearer ${SECRET}`], ["me@example.com"]);
    const forms = [
      SECRET,
      "abcd1234",
      Buffer.from(SECRET).toString("base64"),
      Buffer.from(`me@example.com:${SECRET}`).toString("base64"),
      encodeURIComponent(`Bearer ${SECRET}`),
      Buffer.from(SECRET).toString("hex"),
    ];
    fc.assert(
      fc.property(fc.array(fc.oneof(textArb, fc.constantFrom(...forms)), { maxLength: 12 }), (parts) => {
        const out = r.text(parts.join(""));
        expect(r.leaks(out)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});
