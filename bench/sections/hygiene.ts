// Result hygiene of a large result (redaction of every credential form, measuring, the size cap),
// in process, through the very function the call path runs (src/broker/result-hygiene.ts
// `cleanResult`), with the redactor a pasted token's connection gets (its value and the rendered
// `Bearer` form the vendor receives): the cost the broker adds to every byte a vendor returns.
// The result is the one the stdio reader delivers (src/pool/frame-reader.ts): read from its
// newline-delimited line, so it carries the size of the line the reader already counted.
import { cleanResult } from "../../src/broker/result-hygiene.js";
import { Redactor } from "../../src/hygiene/redact.js";
import { FrameReader } from "../../src/pool/frame-reader.js";
import { type Spread, spread } from "../lib/stats.js";

export interface HygieneResult {
  readonly bytes: number;
  readonly ms: Spread;
}

/** The defaults of SLAUDE_RESULT_MAX_BYTES / SLAUDE_RESULT_MAX_LINES. */
const LIMITS = { maxBytes: 50_000, maxLines: 2_000 };

/** A tools/call result of `text` as a stdio vendor sends it, parsed by the broker's own stdout reader. */
function readResult(text: string) {
  const line = `${JSON.stringify({ result: { content: [{ type: "text", text }] }, jsonrpc: "2.0", id: 1 })}\n`;
  let read: unknown;
  new FrameReader(16 * 1024 * 1024).push(Buffer.from(line), (f) => {
    if (f.kind === "message" && "result" in f.message) read = f.message.result;
  });
  if (read === undefined) throw new Error("the bench line should have been read as a result");
  return read as { content: [{ type: "text"; text: string }] };
}

export function hygiene(bytes: number, rounds: number): HygieneResult {
  const secret = `tok_${"x".repeat(28)}`;
  const redactor = new Redactor([secret], [`Bearer ${secret}`]);
  const text = "lorem ipsum dolor sit amet\n".repeat(Math.ceil(bytes / 27)).slice(0, bytes);
  const result = readResult(text);
  for (let i = 0; i < 3; i++) cleanResult(result, redactor, LIMITS);
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const t = performance.now();
    const out = cleanResult(result, redactor, LIMITS);
    times.push(performance.now() - t);
    if (!out.truncated) throw new Error("the bench result should have been truncated");
  }
  return { bytes, ms: spread(times) };
}
