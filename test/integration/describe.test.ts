import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { rankTools } from "../../src/broker/describe.js";
import { ALICE, BOB, type Harness, makeHarness, mcpCall } from "./broker-harness.js";

// mcp_describe: the metadata cache is filled when a connection's child starts, then served
// without spawning anything; every tool carries the class the broker will apply.

let h: Harness;
beforeEach(async () => {
  h = await makeHarness();
});
afterEach(async () => {
  await h.close();
});

async function describeTool(client: Awaited<ReturnType<Harness["session"]>>["client"], args: Record<string, unknown>) {
  const r = await client.callTool({ name: "mcp_describe", arguments: args });
  return {
    r,
    s: r.structuredContent as {
      source: string;
      contentHash: string | null;
      tools: { name: string; class: { access: string; write: boolean; classified: boolean }; inputSchema?: unknown }[];
      note?: string;
    },
  };
}

describe("mcp_describe", () => {
  it("before any child started it answers from the registry, spawning nothing", async () => {
    await h.connect(ALICE);
    const s = await h.session();
    const { s: out } = await describeTool(s.client, { service: "vendor" });
    expect(out.source).toBe("registry");
    expect(out.note).toContain("not been fetched");
    expect(out.tools.find((t) => t.name === "write_item")?.class).toEqual({
      access: "borrowable",
      write: true,
      classified: true,
    });
    expect(h.broker.pool.stats().spawned).toBe(0);
  });

  it("a child start refreshes the cache with a content hash; later describes spawn nothing and rank by query", async () => {
    const { connection } = await h.connect(ALICE);
    const s = await h.session();
    await mcpCall(s.client, { tool: "echo", args: { text: "x" }, on_behalf_of: ALICE });
    // The refresh runs beside the first call; wait for it to land.
    const meta = await vi.waitFor(
      async () => {
        const m = await h.store.toolMetadata.get("T1", "vendor");
        if (!m) throw new Error("no tool metadata yet");
        return m;
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(meta?.contentHash).toMatch(/^[0-9a-f]{64}$/);

    await h.broker.pool.drop(connection.id);
    const spawnedBefore = h.broker.pool.stats().spawned;
    const { s: all } = await describeTool(s.client, { service: "vendor" });
    expect(all.source).toBe("cache");
    expect(all.contentHash).toBe(meta?.contentHash);
    expect(all.tools.map((t) => t.name)).toContain("spawn_grandchild");
    // An unclassified vendor tool would show the fail-closed class; every fixture tool is classified.
    expect(all.tools.every((t) => t.class.classified)).toBe(true);
    expect(all.tools.every((t) => t.inputSchema === undefined)).toBe(true);

    const { s: one } = await describeTool(s.client, { service: "vendor", tool: "write_item" });
    expect(one.tools).toHaveLength(1);
    expect(one.tools[0]?.inputSchema).toMatchObject({ type: "object" });

    const { s: ranked } = await describeTool(s.client, { service: "vendor", query: "write item" });
    expect(ranked.tools[0]?.name).toBe("write_item");
    expect(h.broker.pool.stats().spawned).toBe(spawnedBefore);
    expect(h.broker.pool.has(connection.id)).toBe(false);
  });

  it("one tool's schema before any vendor ran: fetched on demand through the caller's own connection", async () => {
    await h.connect(ALICE);
    const s = await h.session();
    const { s: one } = await describeTool(s.client, { service: "vendor", tool: "write_item" });
    expect(one.source).toBe("cache");
    expect(one.tools[0]?.inputSchema).toMatchObject({ type: "object", properties: { id: {}, value: {} } });
    expect(h.broker.pool.stats().spawned).toBe(1);
  });

  it("never through another member's connection (that needs the owner's approval); the shared one may serve", async () => {
    await h.connect(ALICE);
    const s = await h.session();
    s.turn.user = BOB;
    const { s: borrowed } = await describeTool(s.client, { service: "vendor", tool: "write_item" });
    expect(borrowed.source).toBe("registry");
    expect(borrowed.tools[0]?.inputSchema).toBeUndefined();
    expect(h.broker.pool.stats().spawned).toBe(0);
    expect(h.approvals.asked).toHaveLength(0);

    await h.connect(null);
    const { s: shared } = await describeTool(s.client, { service: "vendor", tool: "write_item" });
    expect(shared.source).toBe("cache");
    expect(shared.tools[0]?.inputSchema).toMatchObject({ type: "object" });
    expect(h.broker.pool.stats().spawned).toBe(1);
  });

  it("an unknown tool or service is a clear error", async () => {
    const s = await h.session();
    const a = await s.client.callTool({ name: "mcp_describe", arguments: { service: "vendor", tool: "nope" } });
    expect(a.isError).toBe(true);
    const b = await s.client.callTool({ name: "mcp_describe", arguments: { service: "nope" } });
    expect((b.structuredContent as { code: string }).code).toBe("unknown_service");
  });
});

describe("rankTools", () => {
  const tools = [
    { name: "create_issue", description: "Create a new issue in a project" },
    { name: "search_repositories", description: "Search for projects" },
    { name: "issue_comment", description: "Comment on an issue" },
    { name: "get_file", description: "Read a file" },
  ];
  it("ranks name matches above description matches and drops non-matches", () => {
    expect(rankTools(tools, "issue").map((t) => t.name)).toEqual(["create_issue", "issue_comment"]);
    // Word forms: "projects" matches "a project" as well as "projects".
    expect(rankTools(tools, "projects").map((t) => t.name)).toEqual(["create_issue", "search_repositories"]);
    expect(rankTools(tools, "comment issue").map((t) => t.name)).toEqual(["issue_comment", "create_issue"]);
    expect(rankTools(tools, "zzz")).toEqual([]);
    expect(rankTools(tools, "").length).toBe(4);
  });

  it("matches word forms: plurals and -ing/-ed endings find the tool", () => {
    expect(rankTools(tools, "issues").map((t) => t.name)).toEqual(["create_issue", "issue_comment"]);
    expect(rankTools(tools, "commenting").map((t) => t.name)).toEqual(["issue_comment"]);
    expect(rankTools(tools, "files").map((t) => t.name)).toEqual(["get_file"]);
    expect(rankTools(tools, "searches repositories").map((t) => t.name)).toEqual(["search_repositories"]);
  });
});
