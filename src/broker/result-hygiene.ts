import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Redactor } from "../hygiene/redact.js";
import { redactToolResult } from "../hygiene/redact-result.js";
import { truncateText, truncationNotice, type ResultLimits } from "../hygiene/truncate.js";
import { frameTruncatedBytes } from "../pool/frame-reader.js";

/** A vendor result made safe to hand back: redacted, capped, and the size the vendor sent. */
export interface CleanResult {
  readonly result: CallToolResult;
  readonly truncated: boolean;
  readonly bytes: number;
}

/** Redacts every credential form and caps the size; `bytes` is the size seen before truncation. */
export function cleanResult(result: CallToolResult, redactor: Redactor, limits: ResultLimits): CleanResult {
  // A result cut from an oversized frame is always truncated, reporting the size the vendor sent.
  const framed = frameTruncatedBytes(result);
  const redacted = redactToolResult(result, redactor, { cutEnds: framed !== undefined });
  const bytes = framed ?? Buffer.byteLength(JSON.stringify(redacted));
  const texts = redacted.content.filter((c) => c.type === "text").map((c) => (c as { text: string }).text);
  const textBytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
  const lines = texts.reduce((n, t) => n + t.split("\n").length, 0);
  if (framed === undefined && bytes <= limits.maxBytes && textBytes <= limits.maxBytes && lines <= limits.maxLines) {
    return { result: { content: redacted.content, ...(redacted.structuredContent ? { structuredContent: redacted.structuredContent } : {}), ...(result.isError ? { isError: true } : {}) }, truncated: false, bytes };
  }
  const joined = texts.join("\n");
  const cut = truncateText(joined || JSON.stringify(redacted.structuredContent ?? redacted.content), limits);
  return {
    result: { content: [{ type: "text", text: cut.text + truncationNotice(bytes, limits) }], ...(result.isError ? { isError: true } : {}) },
    truncated: true,
    bytes,
  };
}

/** A vendor's error text made safe to show: one line, no URLs, at most 200 characters. */
export function sanitizeVendorText(text: string): string {
  const oneLine = text.replace(/\s+/g, " ").replace(/https?:\/\/\S+/g, "[url]").trim();
  return oneLine.length > 200 ? oneLine.slice(0, 199) + "…" : oneLine;
}
