import type { CallToolResult } from "@modelcontextprotocol/client";
import { countLines, jsonBytes } from "../hygiene/measure.js";
import type { Redactor } from "../hygiene/redact.js";
import { redactToolResult } from "../hygiene/redact-result.js";
import { type ResultLimits, truncateText, truncationNotice } from "../hygiene/truncate.js";
import { frameOf } from "../pool/frame-reader.js";

/** A vendor result made safe to hand back: redacted, capped, and the size the vendor sent. */
export interface CleanResult {
  readonly result: CallToolResult;
  readonly truncated: boolean;
  readonly bytes: number;
  /**
   * Nothing was redacted or cut: `result` holds the very content the client's schema already
   * validated (a subset of its fields), so it need not be validated again.
   */
  readonly asReceived: boolean;
  /** When truncated: the whole redacted text the cut was taken from (what the result store keeps), joined on demand. */
  readonly full?: () => string;
}

/**
 * Redacts every credential form and caps the size; `bytes` is the size seen before truncation:
 * the stdout line the stdio reader already counted, else (a remote vendor) the result measured.
 * One pass over each text: one combined matcher redacts it (no copy when it holds no secret), and
 * sizes and lines are counted with indexOf; nothing serialises the whole result to measure it.
 */
export function cleanResult(result: CallToolResult, redactor: Redactor, limits: ResultLimits): CleanResult {
  const frame = frameOf(result);
  // A result cut from an oversized frame is always truncated, reporting the size the vendor sent.
  const framed = frame?.truncated === true;
  const redacted = redactToolResult(result, redactor, { cutEnds: framed });
  const texts = redacted.content.filter((c) => c.type === "text").map((c) => (c as { text: string }).text);
  // A line within the limit holds a result within it, unless redaction changed (grew) the result.
  const withinByFrame = frame !== undefined && !redacted.altered && frame.bytes <= limits.maxBytes;
  let measured: number | undefined;
  const measure = () => {
    measured ??= jsonBytes(
      redacted.structuredContent
        ? { content: redacted.content, structuredContent: redacted.structuredContent }
        : { content: redacted.content },
    );
    return measured;
  };
  const overBytes = framed || textsOver(texts, limits.maxBytes) || (!withinByFrame && measure() > limits.maxBytes);
  const overLines = countLines(texts, limits.maxLines + 1) > limits.maxLines;
  const bytes = frame?.bytes ?? measure();
  if (!overBytes && !overLines) {
    return {
      result: {
        content: redacted.content,
        ...(redacted.structuredContent ? { structuredContent: redacted.structuredContent } : {}),
        ...(result.isError ? { isError: true } : {}),
      },
      truncated: false,
      bytes,
      asReceived: !redacted.altered,
    };
  }
  const fallback = () => JSON.stringify(redacted.structuredContent ?? redacted.content);
  // The cut reads only the head it can reach; the whole text is joined only when the result store asks for it.
  const cut = truncateText(joinHead(texts, limits.maxBytes) || fallback(), limits);
  return {
    result: {
      content: [
        {
          type: "text",
          text:
            cut.text +
            truncationNotice(bytes, limits, { bytes: overBytes, lines: overLines ? countLines(texts) : null }),
        },
      ],
      ...(result.isError ? { isError: true } : {}),
    },
    truncated: true,
    bytes,
    asReceived: false,
    full: () => texts.join("\n") || fallback(),
  };
}

/** Whether the texts' UTF-8 bytes exceed `maxBytes` (every UTF-16 unit is at least one byte: long ones need no count). */
function textsOver(texts: readonly string[], maxBytes: number): boolean {
  let units = 0;
  for (const t of texts) units += t.length;
  if (units > maxBytes) return true;
  let bytes = 0;
  for (const t of texts) bytes += Buffer.byteLength(t);
  return bytes > maxBytes;
}

/** The texts joined by newlines, only as far as a cut to `maxBytes` can reach (every unit is at least one byte). */
function joinHead(texts: readonly string[], maxBytes: number): string {
  const parts: string[] = [];
  let units = 0;
  for (const t of texts) {
    if (units > maxBytes) break;
    const part = t.length > maxBytes + 1 ? t.slice(0, maxBytes + 1) : t;
    parts.push(part);
    units += part.length + 1;
  }
  return parts.join("\n");
}

/** A vendor's error text made safe to show: one line, no URLs, at most 200 characters. */
export function sanitizeVendorText(text: string): string {
  const oneLine = text
    .replace(/\s+/g, " ")
    .replace(/https?:\/\/\S+/g, "[url]")
    .trim();
  return oneLine.length > 200 ? `${oneLine.slice(0, 199)}…` : oneLine;
}
