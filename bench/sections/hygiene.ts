// Result hygiene of a large result (redaction of every credential form and the size cap), in
// process: the cost the broker adds to every byte a vendor returns.
import { Redactor, secretVariants } from "../../src/hygiene/redact.js";
import { redactToolResult } from "../../src/hygiene/redact-result.js";
import { truncateText } from "../../src/hygiene/truncate.js";
import { spread, type Spread } from "../lib/stats.js";

export interface HygieneResult {
  readonly bytes: number;
  readonly ms: Spread;
}

/** What the call path does to a result (src/broker/call.ts `clean`): redact every form, measure, cap. */
function clean(result: { content: { type: "text"; text: string }[] }, redactor: Redactor): number {
  const redacted = redactToolResult(result, redactor);
  const bytes = Buffer.byteLength(JSON.stringify(redacted));
  const texts = redacted.content.filter((c) => c.type === "text").map((c) => (c as { text: string }).text);
  const lines = texts.reduce((n, t) => n + t.split("\n").length, 0);
  const limits = { maxBytes: 50_000, maxLines: 2_000 };
  if (bytes <= limits.maxBytes && lines <= limits.maxLines) return bytes;
  return truncateText(texts.join("\n"), limits).text.length;
}

export function hygiene(bytes: number, rounds: number): HygieneResult {
  const secret = "tok_" + "x".repeat(28);
  const redactor = new Redactor(secretVariants([secret]), [`Bearer ${secret}`]);
  const text = "lorem ipsum dolor sit amet\n".repeat(Math.ceil(bytes / 27)).slice(0, bytes);
  const result = { content: [{ type: "text" as const, text }] };
  for (let i = 0; i < 3; i++) clean(result, redactor);
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const t = performance.now();
    clean(result, redactor);
    times.push(performance.now() - t);
  }
  return { bytes, ms: spread(times) };
}
