// Reads a vendor's whole tools/list within fixed limits. A vendor that pages forever (always a
// nextCursor), repeats a cursor, sends huge pages or drips pages slowly would otherwise grow the
// broker without bound on one call; over any limit it is a misbehaving vendor, reported as such.
import type { Client, Tool } from "@modelcontextprotocol/client";
import { type Clock, systemClock } from "../clock/clock.js";
import { PoolError } from "./errors.js";

/** Limits on one tools/list read (every page together). Real vendors are far below them. */
export interface ToolListLimits {
  readonly maxPages: number;
  readonly maxTools: number;
  /** Serialised size of every page's tools together. */
  readonly maxBytes: number;
  /** Wall time for every page together. */
  readonly maxMs: number;
}

/** The defaults: 50 pages, 5,000 tools, 4 MiB, 10 s (a 118-tool vendor sends one ~100 KB page). */
export const TOOL_LIST_LIMITS: ToolListLimits = {
  maxPages: 50,
  maxTools: 5_000,
  maxBytes: 4 * 1024 * 1024,
  maxMs: 10_000,
};

/** The error a vendor over a limit gets: the pool stops it and calls waiting for it fail with it. */
export function vendorMisbehaved(what: string): PoolError {
  return new PoolError("vendor_misbehaved", `the vendor's tools/list went over the broker's limit (${what})`);
}

/**
 * Every tool of every page, or a `vendor_misbehaved` PoolError once a limit is passed or a cursor
 * repeats. The time limit bounds real I/O with the vendor: wall time unless a clock is given.
 */
export async function listAllTools(
  client: Pick<Client, "request">,
  limits: ToolListLimits = TOOL_LIST_LIMITS,
  clock: Clock = systemClock,
): Promise<Tool[]> {
  const deadline = clock.now() + limits.maxMs;
  const seen = new Set<string>();
  const tools: Tool[] = [];
  let bytes = 0;
  let cursor: string | undefined;
  for (let pages = 1; ; pages++) {
    const left = deadline - clock.now();
    if (left <= 0) throw vendorMisbehaved(`${limits.maxMs} ms`);
    let page: Awaited<ReturnType<Client["listTools"]>>;
    try {
      // One page per request: the SDK's listTools() without a cursor walks every page itself (and
      // may answer from its cache).
      const params = cursor ? { cursor } : {};
      page = await client.request({ method: "tools/list", params }, { timeout: left, maxTotalTimeout: left });
    } catch (err) {
      // Our own deadline, not a vendor error code, decides that the time limit was passed.
      if (clock.now() >= deadline) throw vendorMisbehaved(`${limits.maxMs} ms`);
      throw err;
    }
    bytes += Buffer.byteLength(JSON.stringify(page.tools));
    if (bytes > limits.maxBytes) throw vendorMisbehaved(`${limits.maxBytes} bytes`);
    if (tools.length + page.tools.length > limits.maxTools) throw vendorMisbehaved(`${limits.maxTools} tools`);
    tools.push(...page.tools);
    cursor = page.nextCursor;
    if (!cursor) return tools;
    if (seen.has(cursor)) throw vendorMisbehaved("a repeated cursor");
    if (pages >= limits.maxPages) throw vendorMisbehaved(`${limits.maxPages} pages`);
    // Cursors are bounded by the byte limit only through the pages: cap each one too.
    if (cursor.length > 1024) throw vendorMisbehaved("a cursor over 1 KiB");
    seen.add(cursor);
  }
}
