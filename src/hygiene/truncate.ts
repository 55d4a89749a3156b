/** Caps on what a tool result may carry back to the model. */
export interface ResultLimits {
  readonly maxBytes: number;
  readonly maxLines: number;
}

/** Cuts `text` to the limits; `truncated` says whether anything was dropped. Reads only the part it keeps. */
export function truncateText(text: string, limits: ResultLimits): { text: string; truncated: boolean } {
  let out = text;
  let truncated = false;
  // The end of line maxLines, found by indexOf: no string per line.
  let end = -1;
  for (let n = 0; n < limits.maxLines; n++) {
    end = out.indexOf("\n", end + 1);
    if (end < 0) break;
  }
  if (end >= 0 && limits.maxLines > 0) {
    out = out.slice(0, end);
    truncated = true;
  } else if (limits.maxLines === 0) {
    out = "";
    truncated = true;
  }
  // Every UTF-16 unit is at least one UTF-8 byte: the first maxBytes units hold every byte kept.
  const head = out.length > limits.maxBytes ? out.slice(0, limits.maxBytes) : out;
  if (head !== out || Buffer.byteLength(head) > limits.maxBytes) {
    // Cut on a character boundary.
    out = Buffer.from(head)
      .subarray(0, limits.maxBytes)
      .toString("utf8")
      .replace(/\uFFFD$/, "");
    truncated = true;
  }
  return { text: out, truncated };
}

/** Which of the limits a result went past (both may). */
export interface LimitsExceeded {
  readonly bytes: boolean;
  /** The result's line count when it went past `maxLines`, else null. */
  readonly lines: number | null;
}

/**
 * The notice appended to a truncated result: it names the limit the result actually went past
 * (bytes, lines or both), so a result cut for its line count does not claim a byte limit it kept.
 */
export function truncationNotice(originalBytes: number, limits: ResultLimits, over: LimitsExceeded): string {
  const bytes = `${originalBytes} bytes exceeded the limit of ${limits.maxBytes} bytes`;
  const lines = over.lines === null ? undefined : `${over.lines} lines exceeded the limit of ${limits.maxLines} lines`;
  const what =
    lines === undefined
      ? bytes
      : over.bytes
        ? `${bytes}, and ${lines}`
        : `${lines} (its ${originalBytes} bytes were within the limit of ${limits.maxBytes})`;
  return `\n[slaude-connect: result truncated: ${what}. Ask for less (filters, pagination).]`;
}
