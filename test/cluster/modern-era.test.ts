// The 2026-07-28 era across real broker replicas (`slaude-connect serve`) on one real PostgreSQL:
// a real SDK v2 client pinned to the revision, once on one replica and once behind the round-robin
// balancer (no stickiness, no session at all). It lists the tools, reports a turn, describes a
// service, and runs a borrowed mcp_call that waits for the owner's approval card with progress
// streaming on the call's own response, resumes on the click (which lands on any replica), and,
// a second time, is cancelled by closing that response.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ThreadRef } from "../../src/domain/thread.js";
import { approvalCard } from "../support/replicas.js";
import { ALICE, addConnection, BOB, type Cluster, query, startCluster } from "./cluster-story.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 180_000 });
const MODERN = "2026-07-28";

let c: Cluster;
const clients: Client[] = [];

beforeAll(async () => {
  c = await startCluster(2);
  await addConnection(c.set, c.fake.teamId, ALICE);
});
afterAll(async () => {
  for (const cl of clients) await cl.close().catch(() => {});
  await c?.stop();
});

/** A v2 client pinned to 2026-07-28 on `baseUrl`, for `thread`. */
async function pinned(baseUrl: string, thread: ThreadRef): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
    requestInit: {
      headers: {
        Authorization: `Bearer ${c.set.hostToken}`,
        "X-Slaude-Thread": `${thread.teamId}/${thread.channelId}/${thread.threadTs}`,
      },
    },
  });
  const client = new Client({ name: "modern-host", version: "1" }, { versionNegotiation: { mode: { pin: MODERN } } });
  await client.connect(transport, { timeout: 60_000 });
  clients.push(client);
  return client;
}

const where = [
  { name: "one replica", url: () => c.set.replicas[0]!.url, thread: 40 },
  { name: "the round-robin balancer", url: () => c.set.proxy.url, thread: 41 },
];

describe.each(where)("a v2 client pinned to 2026-07-28, through $name", ({ url, thread: n }) => {
  it("lists, describes; a borrowed call waits for the card with progress, then resumes", async () => {
    const thread = c.thread(n);
    const before = c.set.proxy.routes.length;
    const bob = await pinned(url(), thread);
    expect((await bob.listTools()).tools).toHaveLength(5);
    await c.set.turn(thread, ALICE, url());
    await c.set.turn(thread, BOB, url());
    const d = await bob.callTool({ name: "mcp_describe", arguments: { service: "stubborn" } });
    expect((d.structuredContent as { status: string }).status, JSON.stringify(d.structuredContent)).toBe("ok");

    const progress: string[] = [];
    let waiting!: () => void;
    const progressed = new Promise<void>((resolve) => (waiting = resolve));
    const args = { id: `modern-${n}-${Date.now()}` };
    const pending = bob.callTool(
      { name: "mcp_call", arguments: { service: "stubborn", tool: "read_item", args, on_behalf_of: BOB } },
      {
        timeout: 90_000,
        resetTimeoutOnProgress: true,
        onprogress: (p) => {
          progress.push(p.message ?? "");
          waiting();
        },
      },
    );
    const card = await approvalCard(c.fake, ALICE, n === 40 ? 0 : 2);
    // The heartbeat of the wait arrives on the call's own response before anyone clicks.
    await progressed;
    expect(progress[0]).toContain("waiting for");
    const click = await c.set.click(card, ALICE, "approval_allow_once");
    expect(click.status).toBe(200);
    const r = await pending;
    expect(r.structuredContent, JSON.stringify(r.structuredContent)).toMatchObject({
      status: "ok",
      ranAs: "approval_once",
    });
    // Stateless: nothing of it names a session.
    expect(c.set.proxy.routes.slice(before).every((route) => route.sessionId === undefined)).toBe(true);
    if (url() === c.set.proxy.url)
      expect(new Set(c.set.proxy.routes.slice(before).map((route) => route.backend)).size).toBe(2);
  });

  it("closing the waiting call's stream cancels it: the approval is withdrawn", async () => {
    const thread = c.thread(n + 10);
    const bob = await pinned(url(), thread);
    await c.set.turn(thread, ALICE, url());
    await c.set.turn(thread, BOB, url());
    const ac = new AbortController();
    const args = { id: `cancelled-${n}-${Date.now()}` };
    const pending = bob.callTool(
      { name: "mcp_call", arguments: { service: "stubborn", tool: "read_item", args, on_behalf_of: BOB } },
      {
        signal: ac.signal,
        timeout: 90_000,
        resetTimeoutOnProgress: true,
        onprogress: () => ac.abort("the user gave up"),
      },
    );
    await expect(pending).rejects.toThrow();
    const threadTs = thread.threadTs;
    await vi.waitFor(
      async () => {
        const rows = await query<{ status: string }>(
          c.set,
          "SELECT status FROM approvals WHERE borrower_user_id = $1 AND thread_ts = $2",
          [BOB, threadTs],
        );
        expect(rows.map((row) => row.status)).toEqual(["expired"]);
      },
      { timeout: 20_000, interval: 200 },
    );
  });
});
