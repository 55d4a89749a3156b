// Paging a stored result: pages fit the inline cap, never split a character, and concatenate back
// to the exact text; page 1 is what the call showed inline.
import { describe, expect, it } from "vitest";
import { truncateText } from "../../src/hygiene/truncate.js";
import { pageBounds, pageCount, pageOf } from "../../src/results/result-pages.js";
import { parseResultUri, resultUri } from "../../src/results/result-uri.js";

const pagesOf = (text: string, limits: { maxBytes: number; maxLines: number }): string[] => {
  const bytes = Buffer.from(text);
  return pageBounds(bytes, limits).map(([a, b]) => bytes.subarray(a, b).toString("utf8"));
};

/** A deterministic text mixing short and long lines, ASCII and 2-, 3- and 4-byte characters. */
function sample(seed: number, lines: number): string {
  const alphabet = ["a", "b", "é", "€", "😀", " ", "z"];
  let x = seed;
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    const len = x % 90;
    let line = "";
    for (let j = 0; j < len; j++) line += alphabet[(x >> (j % 16)) % alphabet.length];
    out.push(line);
  }
  return out.join("\n");
}

describe("result pages", () => {
  it("fit the byte and line caps, keep characters whole and concatenate to the exact text", () => {
    for (const [seed, limits] of [
      [1, { maxBytes: 100, maxLines: 5 }],
      [2, { maxBytes: 7, maxLines: 1_000 }],
      [3, { maxBytes: 1_000, maxLines: 3 }],
      [4, { maxBytes: 5, maxLines: 1 }],
      [5, { maxBytes: 2, maxLines: 2 }],
    ] as const) {
      const text = sample(seed, 200);
      const pages = pagesOf(text, limits);
      expect(pages.join("")).toBe(text);
      expect(pages.length).toBeGreaterThan(1);
      expect(pages.length).toBe(pageCount(text, limits));
      expect(pageOf(text, limits, 2)?.text).toBe(pages[1]);
      for (const p of pages) {
        expect(p).not.toContain("\uFFFD");
        // A cap below one character's width still moves on one character at a time.
        expect(Buffer.byteLength(p) <= limits.maxBytes || [...p].length === 1).toBe(true);
        expect(p.split("\n").filter((_, i, all) => i < all.length - 1 || all[i] !== "").length).toBeLessThanOrEqual(
          limits.maxLines,
        );
      }
    }
  });

  it("page 1 is the text the call showed inline (truncateText), give or take the newline it cut at", () => {
    const limits = { maxBytes: 500, maxLines: 10 };
    for (const text of [sample(7, 100), "é".repeat(400), "x\n".repeat(50)]) {
      const inline = truncateText(text, limits).text;
      const first = pageOf(text, limits, 1)!.text;
      expect(first.replace(/\n$/, "")).toBe(inline);
    }
  });

  it("a page past the last is undefined; an empty or short text is one page", () => {
    expect(pageOf("", { maxBytes: 10, maxLines: 10 }, 1)).toEqual({ text: "", page: 1, pages: 1 });
    expect(pageOf("short", { maxBytes: 10, maxLines: 10 }, 2)).toBeUndefined();
    expect(pageCount("a\nb\nc\n", { maxBytes: 100, maxLines: 1 })).toBe(3);
  });
});

describe("result URIs", () => {
  const id = "res_AAAAAAAAAAAAAAAA";
  it("round-trip; page 1 is the bare URI", () => {
    expect(resultUri(id)).toBe(`slaude://results/${id}`);
    expect(resultUri(id, 3)).toBe(`slaude://results/${id}?page=3`);
    expect(parseResultUri(resultUri(id))).toEqual({ id, page: 1 });
    expect(parseResultUri(resultUri(id, 42))).toEqual({ id, page: 42 });
  });

  it("refuse anything else", () => {
    for (const bad of [
      `slaude://results/${id}?page=0`,
      `slaude://results/${id}?page=01`,
      `slaude://results/${id}?page=-1`,
      `slaude://results/${id}?page=2&x=1`,
      `slaude://results/${id}/../x`,
      `slaude://results/${id}x`,
      `slaude://results/conn_AAAAAAAAAAAAAAAA`,
      `SLAUDE://results/${id}`,
      `http://results/${id}`,
      `slaude://results/${id}?page=99999999`,
      "",
    ]) {
      expect(parseResultUri(bad), bad).toBeUndefined();
    }
  });
});
