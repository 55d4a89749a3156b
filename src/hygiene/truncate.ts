/** Caps on what a tool result may carry back to the model. */
export interface ResultLimits {
  readonly maxBytes: number;
  readonly maxLines: number;
}

/** Cuts `text` to the limits; `truncated` says whether anything was dropped. */
export function truncateText(text: string, limits: ResultLimits): { text: string; truncated: boolean } {
  let out = text;
  let truncated = false;
  const lines = out.split("\n");
  if (lines.length > limits.maxLines) {
    out = lines.slice(0, limits.maxLines).join("\n");
    truncated = true;
  }
  if (Buffer.byteLength(out) > limits.maxBytes) {
    // Cut on a character boundary.
    out = Buffer.from(out).subarray(0, limits.maxBytes).toString("utf8").replace(/\uFFFD$/, "");
    truncated = true;
  }
  return { text: out, truncated };
}

/** The notice appended to a truncated result. */
export function truncationNotice(originalBytes: number, limits: ResultLimits): string {
  return `\n[slaude-connect: result truncated: ${originalBytes} bytes exceeded the limit of ${limits.maxBytes} bytes / ${limits.maxLines} lines. Ask for less (filters, pagination).]`;
}
