// A line diff of two definitions for an admin: the pinned one against the changed one. Both are
// already cut to MAX_DEFINITION_CHARS, and the line count is capped again here, so the table of
// the longest-common-subsequence walk stays small whatever a vendor sends.

/** Most lines of each side compared; the rest is reported as cut. */
export const MAX_DIFF_LINES = 400;

/** One line of a diff: kept, removed from the pinned definition, or added by the changed one. */
export interface DiffLine {
  readonly op: " " | "-" | "+";
  readonly text: string;
}

/** The line diff of `before` (pinned; null when never accepted) and `after` (changed). */
export function diffDefinitions(before: string | null, after: string | null): DiffLine[] {
  const cut = (s: string | null) => {
    const lines = s === null ? [] : s.split("\n");
    return { lines: lines.slice(0, MAX_DIFF_LINES), over: Math.max(0, lines.length - MAX_DIFF_LINES) };
  };
  const a = cut(before);
  const b = cut(after);
  const n = a.lines.length;
  const m = b.lines.length;
  // lcs[i][j]: the common-subsequence length of a[i..] and b[j..].
  const lcs = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--)
      lcs[i]![j] = a.lines[i] === b.lines[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  }
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a.lines[i] === b.lines[j]) {
      out.push({ op: " ", text: a.lines[i]! });
      i++;
      j++;
    }
    // Removals before additions at a tie, as `diff -u` prints them.
    else if (i < n && (j >= m || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) out.push({ op: "-", text: a.lines[i++]! });
    else out.push({ op: "+", text: b.lines[j++]! });
  }
  if (a.over || b.over) out.push({ op: " ", text: `… (${a.over} pinned and ${b.over} changed lines not compared)` });
  return out;
}

/** The diff as text, one `-`/`+`/` ` prefixed line each. */
export function renderDiff(lines: readonly DiffLine[]): string {
  return lines.map((l) => `${l.op} ${l.text}`).join("\n");
}
