import { describe, expect, it } from "vitest";
import { cleanResult } from "../../src/broker/result-hygiene.js";
import { Redactor } from "../../src/hygiene/redact.js";

// The notice on a truncated result names the limit the result went past: a result cut for its
// line count used to say "44059 bytes exceeded the limit of 50000", a byte limit it had kept.

const LIMITS = { maxBytes: 50_000, maxLines: 2_000 };
const none = new Redactor([]);
const text = (t: string) => ({ content: [{ type: "text" as const, text: t }] });
const notice = (t: string) => {
  const r = cleanResult(text(t), none, LIMITS);
  expect(r.truncated).toBe(true);
  const c = r.result.content[0] as { text: string };
  return c.text.slice(c.text.indexOf("\n[slaude-connect: result truncated"));
};

describe("truncation notice", () => {
  it("a result over the line limit but under the byte limit names the line limit, not the byte limit", () => {
    const lines = Array.from({ length: 3_000 }, (_, i) => `line ${i}`).join("\n");
    expect(Buffer.byteLength(lines)).toBeLessThan(LIMITS.maxBytes);
    const n = notice(lines);
    expect(n).toContain("3000 lines exceeded the limit of 2000 lines");
    expect(n).not.toMatch(/bytes exceeded the limit/);
    expect(n).toMatch(/bytes were within the limit of 50000/);
  });

  it("a result over the byte limit in few lines names the byte limit only", () => {
    const n = notice("x".repeat(80_000));
    expect(n).toMatch(
      /^\n\[slaude-connect: result truncated: \d+ bytes exceeded the limit of 50000 bytes\. Ask for less/,
    );
    expect(n).not.toContain("lines");
  });

  it("a result over both names both", () => {
    const n = notice(Array.from({ length: 5_000 }, () => "y".repeat(30)).join("\n"));
    expect(n).toMatch(/\d+ bytes exceeded the limit of 50000 bytes, and 5000 lines exceeded the limit of 2000 lines/);
  });
});
