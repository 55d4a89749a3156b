import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { describe, expect, it, type TestContext } from "vitest";
import { PoolError } from "../../src/pool/errors.js";
import { listAllTools, TOOL_LIST_LIMITS, type ToolListLimits } from "../../src/pool/tool-paging.js";
import { HOSTILE_VENDOR_ARGS } from "../fixtures/paths.js";

// listAllTools against the hostile fixture vendor as a real child: every limit (pages, tools, bytes,
// time, a repeated cursor) ends the read with vendor_misbehaved; a normal vendor lists in full.

async function hostile(ctx: TestContext, env: Record<string, string>): Promise<Client> {
  const client = new Client({ name: "paging-test", version: "1" });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [...HOSTILE_VENDOR_ARGS], env, stderr: "ignore" }),
  );
  ctx.onTestFinished(() => client.close());
  return client;
}

async function misbehaved(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PoolError);
  expect((err as PoolError).code).toBe("vendor_misbehaved");
  return (err as PoolError).message;
}

// The default limits, with a time limit that a loaded machine cannot reach first (except where tested).
const limits = (o: Partial<ToolListLimits> = {}): ToolListLimits => ({ ...TOOL_LIST_LIMITS, maxMs: 120_000, ...o });

describe.concurrent("tools/list paging limits", () => {
  it("lists a normal vendor in full", async (ctx) => {
    const tools = await listAllTools(await hostile(ctx, { HOSTILE_TOOLS_LIST: "normal" }), limits());
    expect(tools.map((t) => t.name)).toEqual(["echo", "hang", "daemonize", "flood_stdout"]);
  });

  it("stops an endless pager at the page limit", async (ctx) => {
    const client = await hostile(ctx, { HOSTILE_TOOLS_LIST: "endless" });
    const t0 = performance.now();
    expect(await misbehaved(listAllTools(client, limits()))).toContain(`${TOOL_LIST_LIMITS.maxPages} pages`);
    // A figure for the report, not an assertion (the machine is shared and noisy).
    console.log(`endless pager stopped after ${(performance.now() - t0).toFixed(0)} ms`);
  });

  it("stops at the first repeated cursor", async (ctx) => {
    expect(await misbehaved(listAllTools(await hostile(ctx, { HOSTILE_TOOLS_LIST: "repeat" }), limits()))).toContain(
      "repeated cursor",
    );
  });

  it("stops a page over the byte limit", async (ctx) => {
    expect(await misbehaved(listAllTools(await hostile(ctx, { HOSTILE_TOOLS_LIST: "huge" }), limits()))).toContain(
      `${TOOL_LIST_LIMITS.maxBytes} bytes`,
    );
  });

  it("stops at the tool-count limit", async (ctx) => {
    const client = await hostile(ctx, { HOSTILE_TOOLS_LIST: "endless" });
    expect(await misbehaved(listAllTools(client, limits({ maxTools: 10 })))).toContain("10 tools");
  });

  it("stops a slow drip of pages at the time limit", async (ctx) => {
    const client = await hostile(ctx, { HOSTILE_TOOLS_LIST: "slow", HOSTILE_PAGE_DELAY_MS: "200" });
    expect(await misbehaved(listAllTools(client, limits({ maxMs: 1_000 })))).toContain("1000 ms");
  });
});
