import type { ResultLimits } from "../hygiene/truncate.js";

// Paging a stored result: a page holds at most the inline cap (bytes and lines), so page 1 is what
// the call returned inline and every page fits where an inline result fits. Pages are cut on
// UTF-8 character boundaries and keep their newlines: the pages, concatenated, are the text.

/** One page of a stored result. */
export interface ResultPage {
  readonly text: string;
  /** 1-based. */
  readonly page: number;
  readonly pages: number;
}

/** The [start, end) byte offsets of every page of `bytes` under `limits`; an empty text has one empty page. */
export function pageBounds(bytes: Buffer, limits: ResultLimits): Array<readonly [number, number]> {
  const out: Array<readonly [number, number]> = [];
  let start = 0;
  do {
    const end = pageEnd(bytes, start, limits);
    out.push([start, end]);
    start = end;
  } while (start < bytes.length);
  return out;
}

/** Where the page starting at `start` ends: after `maxLines` newlines or `maxBytes` bytes, whichever is first. */
function pageEnd(bytes: Buffer, start: number, limits: ResultLimits): number {
  let lineEnd = start;
  const byteCap = start + limits.maxBytes;
  // Newlines past the byte cap cannot end this page: stop looking there.
  for (let n = 0; n < limits.maxLines && lineEnd < byteCap; n++) {
    const nl = bytes.indexOf(0x0a, lineEnd);
    if (nl === -1) {
      lineEnd = bytes.length;
      break;
    }
    lineEnd = nl + 1;
  }
  let end = Math.min(lineEnd, byteCap, bytes.length);
  // Never split a character: back off over continuation bytes (10xxxxxx).
  while (end > start && end < bytes.length && (bytes[end]! & 0xc0) === 0x80) end--;
  // A cap smaller than one character still moves on: the page holds that one character.
  if (end === start && start < bytes.length) {
    end = start + 1;
    while (end < bytes.length && (bytes[end]! & 0xc0) === 0x80) end++;
  }
  return end;
}

/** Page `page` (1-based) of `text`, or undefined when the text has fewer pages. */
export function pageOf(text: string, limits: ResultLimits, page: number): ResultPage | undefined {
  const r = pageOfBytes(Buffer.from(text, "utf8"), limits, page);
  return "text" in r ? r : undefined;
}

/** Page `page` of UTF-8 `bytes` (only that page is decoded), or the page count when there is no such page. */
export function pageOfBytes(
  bytes: Buffer,
  limits: ResultLimits,
  page: number,
): ResultPage | { readonly pages: number } {
  const bounds = pageBounds(bytes, limits);
  const b = bounds[page - 1];
  if (!b) return { pages: bounds.length };
  return { text: bytes.subarray(b[0], b[1]).toString("utf8"), page, pages: bounds.length };
}

/** How many pages `text` has under `limits`. */
export function pageCount(text: string, limits: ResultLimits): number {
  return pageBounds(Buffer.from(text, "utf8"), limits).length;
}
