// Measuring a result without serialising it: a 5 MB text costs a few memchr passes here instead of
// a JSON.stringify (a full copy with escaping) and a split into lines (one string per line).

/** Strings shorter than this are measured by JSON.stringify itself: exact and cheap. */
const SMALL = 64 * 1024;

/** How many times `ch` (one UTF-16 unit) occurs in `s`, counted with indexOf (memchr speed). */
export function countChar(s: string, ch: string, stopAt = Infinity): number {
  let n = 0;
  for (let i = s.indexOf(ch); i >= 0 && n < stopAt; i = s.indexOf(ch, i + 1)) n++;
  return n;
}

/** The lines of `texts` (as split("\n") would count them), counting at most to `stopAt`. */
export function countLines(texts: readonly string[], stopAt = Infinity): number {
  let n = 0;
  for (const t of texts) {
    if (n >= stopAt) break;
    n += 1 + countChar(t, "\n", stopAt - n);
  }
  return n;
}

/**
 * The UTF-8 size of `JSON.stringify(s)` for a long string: its bytes, the quotes, and one extra
 * byte per escaped newline, tab, carriage return, quote and backslash. Other control characters
 * (which JSON writes as \\u00XX) are rare in text and counted as one byte: the figure can be short
 * by 5 bytes per such character, never more.
 */
function longStringBytes(s: string): number {
  let escapes = 0;
  for (const ch of ["\n", '"', "\\", "\t", "\r"]) escapes += countChar(s, ch);
  return 2 + Buffer.byteLength(s) + escapes;
}

/** The UTF-8 size of `JSON.stringify(value)`, long strings measured without serialising them. */
export function jsonBytes(value: unknown): number {
  const long: string[] = [];
  // Long strings are swapped for "" in a skeleton that is small to stringify; their sizes are added.
  const skeleton = JSON.stringify(value, (_k, v: unknown) => {
    if (typeof v === "string" && v.length >= SMALL) {
      long.push(v);
      return "";
    }
    return v;
  });
  if (skeleton === undefined) return 0;
  return Buffer.byteLength(skeleton) + long.reduce((n, s) => n + longStringBytes(s) - 2, 0);
}
