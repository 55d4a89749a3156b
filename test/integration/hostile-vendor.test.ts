import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it, type TestContext } from "vitest";
import { ChildLedger } from "../../src/pool/child-ledger.js";
import { fullGc } from "../support/gc.js";
import { isAlive, processesReferencing, waitDead, waitFor } from "../support/proc.js";
import { ALICE, BOB, type Harness, makeHarness, mcpCall, THREAD } from "./broker-harness.js";
import { hostileRegistryDoc } from "./hostile-registry.js";

// Issue 9 items 1 and 2 against the hostile fixture vendor as real child processes: endless
// tools/list paging ends a call with vendor_misbehaved and stops the child; a grandchild that leaves
// its session holding the vendor's stdout (and the credential in its environment) no longer outlives
// its leader, revoke, broker stop or the restart sweep, nor hangs the pool, shutdown or the
// revocation pass. Then the acceptance run: the broker's memory comes back, nothing of the hostile
// connection is left, and another user's calls on a normal vendor keep working throughout.

async function harness(
  ctx: TestContext,
  opts: Parameters<typeof makeHarness>[0] = {},
): Promise<{ h: Harness; events: string }> {
  const logDir = mkdtempSync(path.join(os.tmpdir(), "slaude-hostile-"));
  const events = path.join(logDir, "events.log");
  const h = await makeHarness({ registryDoc: hostileRegistryDoc(events), ...opts });
  ctx.onTestFinished(async () => {
    await h.close();
    rmSync(logDir, { recursive: true, force: true });
  });
  return { h, events };
}

async function sessionAs(h: Harness, user: string, thread: typeof THREAD = THREAD) {
  const s = await h.session(thread);
  s.turn.user = user;
  return s;
}

const pagesServed = (events: string): number => {
  try {
    return readFileSync(events, "utf8")
      .split("\n")
      .filter((l) => l.startsWith("page ")).length;
  } catch {
    return 0;
  }
};

/** Every live process of a connection: its private HOME (under the run dir) or its credential. */
const processesOf = (h: Harness, connectionId: string, token: string) =>
  processesReferencing([path.join(h.dir, "run", "vendors", `${connectionId}-`), token]);

describe.concurrent("item 1: tools/list paging", () => {
  it("an endless pager, a repeated cursor and a huge page end the call with vendor_misbehaved; the child is stopped, nothing is cached", async (ctx) => {
    const { h, events } = await harness(ctx);
    const s = await sessionAs(h, ALICE);
    for (const service of ["bomb", "repeat", "huge"]) {
      const { connection, token } = await h.connect(ALICE, { service });
      const t0 = Date.now();
      const r = await mcpCall(s.client, { service, tool: "echo", args: { text: "hi" }, on_behalf_of: ALICE });
      // A figure for the report, not an assertion: most of it is the child's start on a loaded machine.
      console.log(`${service}: vendor_misbehaved after ${Date.now() - t0} ms (spawn and initialize included)`);
      expect(r.structured.code, service).toBe("vendor_misbehaved");
      expect(r.text).toContain("went over slaude-connect's limits");
      expect(h.broker.pool.has(connection.id)).toBe(false);
      expect(await waitFor(() => processesOf(h, connection.id, token).length === 0, 10_000)).toBe(true);
      expect(await h.store.toolMetadata.get(THREAD.teamId, service)).toBeUndefined();
      const rows = await h.store.audit.query({ service, event: "call" });
      expect(rows.map((a) => a.errorCode)).toEqual(["vendor_misbehaved"]);
    }
    // Bounded work: the endless pager was read for at most the page limit (plus one repeat page each).
    expect(pagesServed(events)).toBeLessThanOrEqual(50 + 2 + 1);
  });
});

describe.concurrent("item 2: a daemonising grandchild", () => {
  it("the leader's exit ends the vendor: slot released, grandchild killed, credential gone, the next call works", async (ctx) => {
    const { h } = await harness(ctx);
    const { connection, token } = await h.connect(ALICE, { service: "hostile" });
    const s = await sessionAs(h, ALICE);
    const d = await mcpCall(s.client, { service: "hostile", tool: "daemonize", on_behalf_of: ALICE });
    expect(d.structured.status).toBe("ok");
    const grandchild = (JSON.parse(d.text.split("\n")[0]!) as { grandchild: number }).grandchild;
    // The leader exits 100 ms after answering; its slot goes with it though the grandchild holds stdout.
    expect(await waitFor(() => !h.broker.pool.has(connection.id), 15_000)).toBe(true);
    expect(h.broker.pool.stats()).toMatchObject({ live: 0, stopping: 0 });
    expect(await waitDead([grandchild], 10_000)).toEqual([]);
    expect(processesOf(h, connection.id, token)).toEqual([]);
    const again = await mcpCall(s.client, {
      service: "hostile",
      tool: "echo",
      args: { text: "after" },
      on_behalf_of: ALICE,
    });
    expect(again.structured.status).toBe("ok");
    expect(again.text).toContain("after");
  });

  it("revoke kills a detached grandchild while its leader still runs; no process keeps the token", async (ctx) => {
    const { h } = await harness(ctx);
    const { connection, token } = await h.connect(ALICE, { service: "hostile" });
    const s = await sessionAs(h, ALICE);
    const d = await mcpCall(s.client, {
      service: "hostile",
      tool: "daemonize",
      args: { stay: true },
      on_behalf_of: ALICE,
    });
    const grandchild = (JSON.parse(d.text.split("\n")[0]!) as { grandchild: number }).grandchild;
    ctx.onTestFinished(() => void (isAlive(grandchild) && process.kill(grandchild, "SIGKILL")));
    expect(isAlive(grandchild)).toBe(true);
    expect(processesReferencing([token])).toContain(grandchild);
    await h.lifecycle.revoke(connection.id, ALICE, "test");
    expect(await waitDead([grandchild], 10_000)).toEqual([]);
    expect(processesReferencing([token])).toEqual([]);
    expect(h.broker.pool.stats()).toMatchObject({ live: 0, stopping: 0 });
  });

  it("a revoke made by another process (the CLI) reaches it through the revocation pass, which completes", async (ctx) => {
    const { h } = await harness(ctx);
    const s = await sessionAs(h, ALICE);
    const grandchildren: number[] = [];
    const tokens: string[] = [];
    for (const thread of ["1700000000.000301", "1700000000.000302"]) {
      const t = { ...THREAD, threadTs: thread } as unknown as typeof THREAD;
      const { connection, token } = await h.connect(ALICE, { service: "hostile", thread: t });
      const st = await sessionAs(h, ALICE, t);
      const d = await mcpCall(st.client, {
        service: "hostile",
        tool: "daemonize",
        args: { stay: true },
        on_behalf_of: ALICE,
      });
      grandchildren.push((JSON.parse(d.text.split("\n")[0]!) as { grandchild: number }).grandchild);
      tokens.push(token);
      // The CLI ends the row in the database; the broker learns it only on its next pass.
      await h.store.connections.end(connection.id, {
        status: "revoked",
        reason: "cli",
        at: Date.now(),
        actor: "cli:test",
        audit: [],
      });
    }
    ctx.onTestFinished(() => {
      for (const g of grandchildren) if (isAlive(g)) process.kill(g, "SIGKILL");
    });
    void s;
    expect(await h.broker.reconcile()).toBe(2);
    expect(await waitDead(grandchildren, 10_000)).toEqual([]);
    expect(processesReferencing(tokens)).toEqual([]);
  });

  it("broker stop kills it, and a graceful shutdown does not hang", async (ctx) => {
    const { h } = await harness(ctx);
    const { token } = await h.connect(ALICE, { service: "hostile" });
    const s = await sessionAs(h, ALICE);
    const d = await mcpCall(s.client, {
      service: "hostile",
      tool: "daemonize",
      args: { stay: true },
      on_behalf_of: ALICE,
    });
    const grandchild = (JSON.parse(d.text.split("\n")[0]!) as { grandchild: number }).grandchild;
    ctx.onTestFinished(() => void (isAlive(grandchild) && process.kill(grandchild, "SIGKILL")));
    // Resolves (the harness would otherwise hit the test timeout); the stop sequence is bounded.
    await h.broker.shutdown();
    expect(await waitDead([grandchild], 10_000)).toEqual([]);
    expect(processesReferencing([token])).toEqual([]);
  });

  it("the start-up sweep of the next run kills it, found by its HOME, recorded or not", async (ctx) => {
    const { h } = await harness(ctx);
    const s = await sessionAs(h, ALICE);
    const grandchildren: number[] = [];
    const tokens: string[] = [];
    for (const thread of ["1700000000.000401", "1700000000.000402"]) {
      const t = { ...THREAD, threadTs: thread } as unknown as typeof THREAD;
      const { token } = await h.connect(ALICE, { service: "hostile", thread: t });
      const st = await sessionAs(h, ALICE, t);
      const d = await mcpCall(st.client, {
        service: "hostile",
        tool: "daemonize",
        args: { stay: true },
        on_behalf_of: ALICE,
      });
      grandchildren.push((JSON.parse(d.text.split("\n")[0]!) as { grandchild: number }).grandchild);
      tokens.push(token);
    }
    ctx.onTestFinished(() => {
      for (const g of grandchildren) if (isAlive(g)) process.kill(g, "SIGKILL");
    });
    void s;
    // As after a SIGKILL of the broker: the records stay, and one of them was lost (torn or removed).
    const ledgerDir = path.join(h.dir, "run", "children");
    const records = readdirSync(ledgerDir);
    expect(records).toHaveLength(2);
    rmSync(path.join(ledgerDir, records[0]!));
    const nextRun = new ChildLedger(ledgerDir, path.join(h.dir, "run", "vendors"));
    expect(nextRun.sweep()).toBeGreaterThanOrEqual(2);
    expect(await waitDead(grandchildren, 10_000)).toEqual([]);
    expect(processesReferencing(tokens)).toEqual([]);
  });
});

const rssMb = () => process.memoryUsage().rss / 1024 / 1024;

describe("acceptance: a hostile run leaves the broker as it found it", () => {
  it("paging bomb, daemonising grandchild and a 1 GB flood: RSS back within 50 MB, nothing of the connection left, another user's calls kept working", async (ctx) => {
    // Wall time: the flood (which never answers) runs until the broker's own call deadline.
    const { h } = await harness(ctx, { realClock: true });
    const other = { ...THREAD, threadTs: "1700000000.000900" } as unknown as typeof THREAD;
    h.membership.add(THREAD.teamId, THREAD.channelId, BOB);
    await h.connect(BOB, { service: "vendor", thread: other });
    const bob = await sessionAs(h, BOB, other);
    const warm = await mcpCall(bob.client, { tool: "echo", args: { text: "warm" }, on_behalf_of: BOB });
    expect(warm.structured.status).toBe("ok");
    const startRss = rssMb();
    let peakRss = startRss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb())), 50);
    ctx.onTestFinished(() => clearInterval(sampler));

    // Bob's calls on a normal vendor, back to back, for the whole hostile run.
    let hostileDone = false;
    const bobResults: string[] = [];
    const bobLoop = (async () => {
      for (let i = 0; !hostileDone || i < 3; i++) {
        const r = await mcpCall(bob.client, { tool: "echo", args: { text: `bob-${i}` }, on_behalf_of: BOB });
        bobResults.push(
          r.structured.status === "ok" && r.text.includes(`bob-${i}`)
            ? "ok"
            : `${r.structured.status}:${r.structured.code ?? ""}`,
        );
      }
    })();

    const alice = await sessionAs(h, ALICE);
    const conns: { id: string; token: string }[] = [];
    const connect = async (service: string) => {
      const { connection, token } = await h.connect(ALICE, { service });
      conns.push({ id: connection.id, token });
    };
    try {
      await connect("bomb");
      const bomb = await mcpCall(alice.client, {
        service: "bomb",
        tool: "echo",
        args: { text: "x" },
        on_behalf_of: ALICE,
      });
      expect(bomb.structured.code).toBe("vendor_misbehaved");
      await connect("hostile");
      const d = await mcpCall(alice.client, { service: "hostile", tool: "daemonize", on_behalf_of: ALICE });
      expect(d.structured.status).toBe("ok");
      const flood = await mcpCall(alice.client, {
        service: "hostile",
        tool: "flood_stdout",
        args: { bytes: 1024 ** 3 },
        on_behalf_of: ALICE,
      });
      expect(flood.structured.status).not.toBe("ok");
    } finally {
      hostileDone = true;
    }
    await bobLoop;
    clearInterval(sampler);

    // No process of Alice's hostile connections is left (by private HOME or by credential).
    for (const c of conns)
      expect(await waitFor(() => processesOf(h, c.id, c.token).length === 0, 10_000), c.id).toBe(true);
    expect(bobResults.length).toBeGreaterThanOrEqual(3);
    expect(bobResults.filter((r) => r !== "ok")).toEqual([]);
    // Memory comes back: allocations of the run are garbage once it is over.
    const settled = await waitFor(() => {
      fullGc();
      return rssMb() - startRss < 50;
    }, 30_000);
    console.log(
      `hostile run RSS: start ${startRss.toFixed(0)} MB, peak ${peakRss.toFixed(0)} MB, end ${rssMb().toFixed(0)} MB; Bob's calls ${bobResults.length}`,
    );
    expect(settled).toBe(true);
    // Bounded throughout, not only afterwards (before the limits a paging bomb alone reached GBs).
    expect(peakRss - startRss).toBeLessThan(300);
  });
});
