// The cold first call: the broker's lazy spawn + initialize + call on a connection whose child is
// not running, paired with the vendor's own spawn + initialize + call from a fresh HOME.
import { mkdtempSync } from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { ThreadRef } from "../../src/domain/thread.js";
import { type BrokerProc, ECHO_VENDOR } from "../lib/broker-proc.js";
import { type Spread, spread } from "../lib/stats.js";

export interface ColdResult {
  readonly vendor: Spread;
  readonly broker: Spread;
  readonly extra: Spread;
}

/** `pairs[i]`: a thread where a user with an own connection (child never started) has the turn. */
export async function cold(
  b: BrokerProc,
  pairs: readonly { thread: ThreadRef; user: string }[],
  tmp: string,
): Promise<ColdResult> {
  const vendor: number[] = [];
  const broker: number[] = [];
  for (const [i, p] of pairs.entries()) {
    // The broker gives each child a private HOME and TMPDIR; so does the paired direct spawn.
    const home = mkdtempSync(path.join(tmp, `cold-${i}-`));
    let t = performance.now();
    const c = new Client({ name: "bench", version: "1" });
    await c.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [ECHO_VENDOR],
        env: { PATH: process.env.PATH ?? "", HOME: home, TMPDIR: home, VENDOR_TOKEN: `cold-${i}` },
        stderr: "ignore",
      }),
    );
    await c.callTool({ name: "echo", arguments: { text: "cold" } });
    vendor.push(performance.now() - t);
    await c.close();

    await b.turn(p.thread, p.user);
    const s = await b.session(p.thread);
    t = performance.now();
    const r = await s.callTool({
      name: "mcp_call",
      arguments: { service: "echo", tool: "echo", args: { text: "cold" }, on_behalf_of: p.user },
    });
    broker.push(performance.now() - t);
    if (r.isError) throw new Error(`cold broker call failed: ${JSON.stringify(r.content)}`);
    await s.close();
  }
  return { vendor: spread(vendor), broker: spread(broker), extra: spread(broker.map((x, i) => x - vendor[i]!)) };
}
