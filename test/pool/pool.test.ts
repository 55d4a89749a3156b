import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it, type TestContext, vi } from "vitest";
import type { BrokerOptions } from "../../src/app/broker-factory.js";
import { ChildLedger, processStartTicks } from "../../src/pool/child-ledger.js";
import { VENDOR_STDIO_PATH } from "../fixtures/paths.js";
import {
  ALICE,
  BOB,
  fixtureRegistryDoc,
  type Harness,
  makeHarness,
  mcpCall,
  THREAD,
  TSX_LOADER,
} from "../integration/broker-harness.js";
import {
  envOf,
  groupMembers,
  groupsReferencing,
  isAlive,
  processesReferencing,
  processGroup,
  waitDead,
  waitFor,
} from "../support/proc.js";
import { until } from "../support/until.js";

// The vendor pool with real child processes: lazy spawn, reuse, per-thread isolation, idle reaping,
// the LRU cap, crash/hang handling, process-group kills, the crash ledger, private HOME/TMPDIR,
// cancellation and progress passthrough. Each test builds its own harness (cheap: nothing spawns
// before the first call), so the tests run concurrently and the pool counters are never shared.

// The harness types threads as THREAD's literal type; other threads of the same channel are cast to it.
const inChannel = (threadTs: string) => ({ ...THREAD, threadTs }) as unknown as typeof THREAD;
const THREAD2 = inChannel("1700000000.000200");
const THREAD3 = inChannel("1700000000.000300");

type PoolOpts = NonNullable<BrokerOptions["pool"]>;
const poolOpts = (o: PoolOpts = {}): PoolOpts => ({
  maxChildren: 8,
  idleMs: 60_000,
  acquireTimeoutMs: 5_000,
  stopGraceMs: 500,
  ...o,
});

/** A harness closed when the test ends (pass or fail). */
async function harness(ctx: TestContext, opts: Parameters<typeof makeHarness>[0] = {}): Promise<Harness> {
  const h = await makeHarness(opts);
  ctx.onTestFinished(() => h.close());
  return h;
}

/** A temp dir removed when the test ends. */
function tempDir(ctx: TestContext): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-pool-"));
  ctx.onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A session whose caller is always `user`. */
async function sessionAs(h: Harness, user: string, thread: typeof THREAD = THREAD) {
  const s = await h.session(thread);
  s.turn.user = user;
  return s;
}

function firstJson<T>(text: string): T {
  return JSON.parse(text.split("\n")[0]!) as T;
}

const fingerprint = (token: string) => createHash("sha256").update(token).digest("hex").slice(0, 12);

describe.concurrent("spawn and reuse", () => {
  it("spawns nothing before the first call, then reuses the child by connection id", async (ctx) => {
    const h = await harness(ctx);
    const { connection } = await h.connect(ALICE);
    const s = await sessionAs(h, ALICE);
    // Listing and describing serve from the store and the cache: still no child.
    await s.client.callTool({ name: "connections_list", arguments: {} });
    await s.client.callTool({ name: "mcp_describe", arguments: { service: "vendor" } });
    expect(h.broker.pool.stats()).toMatchObject({ live: 0, spawned: 0 });
    expect(h.broker.pool.pidOf(connection.id)).toBeUndefined();
    expect(processesReferencing([h.dir])).toEqual([]);

    const one = await mcpCall(s.client, { tool: "echo", args: { text: "one" }, on_behalf_of: ALICE });
    expect(one.text).toContain("one");
    const pid = h.broker.pool.pidOf(connection.id)!;
    expect(pid).toBeGreaterThan(0);
    expect(isAlive(pid)).toBe(true);
    // The child and what it started (tsx's esbuild service) are one process group led by the child.
    expect(processesReferencing([h.dir])).toContain(pid);
    expect(groupsReferencing([h.dir])).toEqual([pid]);

    const two = await mcpCall(s.client, { tool: "echo", args: { text: "two" }, on_behalf_of: ALICE });
    expect(two.text).toContain("two");
    expect(h.broker.pool.pidOf(connection.id)).toBe(pid);
    expect(h.broker.pool.stats()).toMatchObject({ live: 1, spawned: 1, leased: 0 });
  });

  it("never shares a child across threads: the same owner's connections in two threads get two processes", async (ctx) => {
    const h = await harness(ctx);
    const a1 = await h.connect(ALICE, { thread: THREAD });
    const a2 = await h.connect(ALICE, { thread: THREAD2 });
    const [s1, s2] = await Promise.all([sessionAs(h, ALICE, THREAD), sessionAs(h, ALICE, THREAD2)]);
    const [r1, r2] = await Promise.all([
      mcpCall(s1.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE }),
      mcpCall(s2.client, { tool: "read_item", args: { id: "2" }, on_behalf_of: ALICE }),
    ]);
    // Each thread's call ran with that thread's credential.
    expect(firstJson<{ tokenFingerprint: string }>(r1.text).tokenFingerprint).toBe(fingerprint(a1.token));
    expect(firstJson<{ tokenFingerprint: string }>(r2.text).tokenFingerprint).toBe(fingerprint(a2.token));
    const p1 = h.broker.pool.pidOf(a1.connection.id);
    const p2 = h.broker.pool.pidOf(a2.connection.id);
    expect(p1).toBeGreaterThan(0);
    expect(p2).toBeGreaterThan(0);
    expect(p1).not.toBe(p2);
    expect(h.broker.pool.stats()).toMatchObject({ live: 2, spawned: 2 });
  });
});

describe.concurrent("idle reaping and the cap", () => {
  it("stops a child once it has been idle for idleMs, and only then", async (ctx) => {
    const h = await harness(ctx, { pool: poolOpts({ idleMs: 1 }) });
    const { connection } = await h.connect(ALICE);
    const s = await sessionAs(h, ALICE);
    await mcpCall(s.client, { tool: "echo", args: { text: "x" }, on_behalf_of: ALICE });
    const pid = h.broker.pool.pidOf(connection.id)!;
    // The crash ledger records the live child and forgets it once it is stopped.
    const ledgerRecord = path.join(h.dir, "run", "children", `${pid}.json`);
    expect(existsSync(ledgerRecord)).toBe(true);
    // The clock has not moved: not idle yet.
    expect(await h.broker.pool.reapIdle()).toBe(0);
    expect(isAlive(pid)).toBe(true);
    h.clock.advance(1);
    expect(await h.broker.pool.reapIdle()).toBe(1);
    // reapIdle waits for the stop sequence: the process is gone when it returns.
    expect(isAlive(pid)).toBe(false);
    expect(existsSync(ledgerRecord)).toBe(false);
    expect(h.broker.pool.pidOf(connection.id)).toBeUndefined();
    expect(h.broker.pool.stats()).toMatchObject({ live: 0, stopping: 0 });
  });

  it("never reaps a child mid-call; it is reaped once the call is over and idle", async (ctx) => {
    const h = await harness(ctx, { pool: poolOpts({ idleMs: 1 }) });
    const { connection } = await h.connect(ALICE);
    const s = await sessionAs(h, ALICE);
    let progressed!: () => void;
    const firstProgress = new Promise<void>((r) => (progressed = r));
    const call = mcpCall(
      s.client,
      { tool: "slow", args: { steps: 10, delayMs: 150 }, on_behalf_of: ALICE },
      { onprogress: () => progressed() },
    );
    await firstProgress;
    const pid = h.broker.pool.pidOf(connection.id)!;
    expect(h.broker.pool.stats().leased).toBe(1);
    // Far past idleMs, still short of the call's own deadline (callTimeoutMs, on the same clock).
    h.clock.advance(5_000);
    expect(await h.broker.pool.reapIdle()).toBe(0);
    const r = await call;
    expect(r.text).toContain("done");
    expect(isAlive(pid)).toBe(true);
    expect(h.broker.pool.pidOf(connection.id)).toBe(pid);
    h.clock.advance(1);
    expect(await h.broker.pool.reapIdle()).toBe(1);
    expect(isAlive(pid)).toBe(false);
  });

  it("at maxChildren, stops the least recently used idle child to make room; never more than the cap alive", async (ctx) => {
    const h = await harness(ctx, { pool: poolOpts({ maxChildren: 2 }) });
    const c1 = await h.connect(ALICE, { thread: THREAD });
    const c2 = await h.connect(ALICE, { thread: THREAD2 });
    const c3 = await h.connect(ALICE, { thread: THREAD3 });
    const [s1, s2, s3] = await Promise.all([
      sessionAs(h, ALICE, THREAD),
      sessionAs(h, ALICE, THREAD2),
      sessionAs(h, ALICE, THREAD3),
    ]);
    let maxLive = 0;
    const sampler = setInterval(() => {
      const st = h.broker.pool.stats();
      maxLive = Math.max(maxLive, st.live + st.stopping);
    }, 2);
    ctx.onTestFinished(() => clearInterval(sampler));
    const call = async (s: typeof s1) => {
      const r = await mcpCall(s.client, { tool: "echo", args: { text: "x" }, on_behalf_of: ALICE });
      expect(r.structured.status).toBe("ok");
      // Real processes, not just the pool's count.
      expect(groupsReferencing([h.dir]).length).toBeLessThanOrEqual(2);
      h.clock.advance(1_000);
    };
    await call(s1);
    const p1 = h.broker.pool.pidOf(c1.connection.id)!;
    await call(s2);
    const p2 = h.broker.pool.pidOf(c2.connection.id)!;
    // Touch c1 again: c2 is now the least recently used.
    await call(s1);
    expect(h.broker.pool.pidOf(c1.connection.id)).toBe(p1);
    await call(s3);
    clearInterval(sampler);
    expect(isAlive(p2)).toBe(false);
    expect(h.broker.pool.pidOf(c2.connection.id)).toBeUndefined();
    expect(isAlive(p1)).toBe(true);
    expect(h.broker.pool.pidOf(c1.connection.id)).toBe(p1);
    expect(h.broker.pool.pidOf(c3.connection.id)).toBeGreaterThan(0);
    expect(h.broker.pool.stats()).toMatchObject({ live: 2, spawned: 3 });
    expect(maxLive).toBeLessThanOrEqual(2);
    expect(maxLive).toBe(2);
  });

  it("refuses with pool_busy when every slot is leased past acquireTimeoutMs, and recovers after", async (ctx) => {
    const h = await harness(ctx, { pool: poolOpts({ maxChildren: 1, acquireTimeoutMs: 300 }) });
    await h.connect(ALICE);
    const bob = await h.connect(BOB);
    const [sa, sb] = await Promise.all([sessionAs(h, ALICE), sessionAs(h, BOB)]);
    let progressed!: () => void;
    const firstProgress = new Promise<void>((r) => (progressed = r));
    const ac = new AbortController();
    const long = mcpCall(
      sa.client,
      { tool: "slow", args: { steps: 100, delayMs: 100 }, on_behalf_of: ALICE },
      { onprogress: () => progressed(), signal: ac.signal },
    );
    await firstProgress;
    const pending = mcpCall(sb.client, { tool: "echo", args: { text: "b" }, on_behalf_of: BOB });
    await vi.waitFor(() => expect(h.broker.pool.stats().waiting).toBe(1), { timeout: 30_000 });
    // The wait runs on the broker's clock: not refused a moment before acquireTimeoutMs.
    h.clock.advance(299);
    expect(h.broker.pool.stats().waiting).toBe(1);
    h.clock.advance(1);
    const busy = await pending;
    expect(busy.isError).toBe(true);
    expect(busy.structured.code).toBe("pool_busy");
    expect(busy.text).toMatch(/busy/i);
    expect(h.broker.pool.pidOf(bob.connection.id)).toBeUndefined();
    expect(h.broker.pool.stats()).toMatchObject({ live: 1, leased: 1 });
    ac.abort();
    await expect(long).rejects.toThrow();
    // The slot is free (idle): B's call evicts A's idle child and runs.
    const ok = await mcpCall(sb.client, { tool: "echo", args: { text: "b" }, on_behalf_of: BOB });
    expect(ok.structured.status).toBe("ok");
    const audit = await h.store.audit.query({ event: "call" });
    expect(audit.map((a) => a.errorCode ?? null)).toContain("pool_busy");
  });
});

describe.concurrent("misbehaving vendors", () => {
  it("a crash ends the call with vendor_crashed; the next call respawns and works", async (ctx) => {
    const h = await harness(ctx);
    const { connection } = await h.connect(ALICE);
    const s = await sessionAs(h, ALICE);
    await mcpCall(s.client, { tool: "echo", args: { text: "x" }, on_behalf_of: ALICE });
    const pid1 = h.broker.pool.pidOf(connection.id)!;
    const home = envOf(pid1).HOME!;
    expect(existsSync(home)).toBe(true);
    const crashed = await mcpCall(s.client, { tool: "crash", on_behalf_of: ALICE });
    expect(crashed.isError).toBe(true);
    expect(crashed.structured.code).toBe("vendor_crashed");
    expect(await waitDead([pid1])).toEqual([]);
    // A crashed child's private dir and ledger record go with it.
    expect(await waitFor(() => !existsSync(path.dirname(home)), 5_000)).toBe(true);
    expect(existsSync(path.join(h.dir, "run", "children", `${pid1}.json`))).toBe(false);
    const again = await mcpCall(s.client, { tool: "echo", args: { text: "back" }, on_behalf_of: ALICE });
    expect(again.structured.status).toBe("ok");
    expect(again.text).toContain("back");
    const pid2 = h.broker.pool.pidOf(connection.id)!;
    expect(pid2).toBeGreaterThan(0);
    expect(pid2).not.toBe(pid1);
    expect(h.broker.pool.stats()).toMatchObject({ live: 1, spawned: 2 });
  });

  it("a hung call ends with vendor_timeout after callTimeoutMs and the child is killed", async (ctx) => {
    const h = await harness(ctx, { callTimeoutMs: 1_000 });
    const { connection } = await h.connect(ALICE);
    const s = await sessionAs(h, ALICE);
    await mcpCall(s.client, { tool: "echo", args: { text: "x" }, on_behalf_of: ALICE });
    const pid = h.broker.pool.pidOf(connection.id)!;
    const before = h.clock.pendingTimers();
    const call = mcpCall(s.client, { tool: "hang", on_behalf_of: ALICE });
    // The broker's deadline is armed on its clock once the call reaches the vendor.
    await vi.waitFor(() => expect(h.clock.pendingTimers()).toBe(before + 1), { timeout: 30_000 });
    h.clock.advance(999);
    expect(h.clock.pendingTimers()).toBe(before + 1);
    h.clock.advance(1);
    const r = await call;
    expect(r.structured.code).toBe("vendor_timeout");
    expect(isAlive(pid)).toBe(false);
    expect(h.broker.pool.pidOf(connection.id)).toBeUndefined();
    expect(h.broker.pool.stats().live).toBe(0);
  });

  it("revoking the connection kills the child and its grandchild (the whole process group)", async (ctx) => {
    const h = await harness(ctx);
    const { connection } = await h.connect(ALICE);
    const s = await sessionAs(h, ALICE);
    const r = await mcpCall(s.client, { tool: "spawn_grandchild", on_behalf_of: ALICE });
    const grandchild = firstJson<{ pid: number }>(r.text).pid;
    const pid = h.broker.pool.pidOf(connection.id)!;
    expect(isAlive(pid)).toBe(true);
    expect(isAlive(grandchild)).toBe(true);
    expect(processGroup(grandchild)).toBe(pid);
    await h.lifecycle.revoke(connection.id, ALICE, "test");
    expect(await waitDead([pid, grandchild])).toEqual([]);
    expect(h.broker.pool.stats().live).toBe(0);
  });

  it("a child that ignores stdin EOF and SIGTERM is still killed by the stop sequence (SIGKILL of the group)", async (ctx) => {
    const dir = tempDir(ctx);
    const events = path.join(dir, "events.log");
    const h = await harness(ctx, {
      registryDoc: fixtureRegistryDoc({ VENDOR_IGNORE_SIGTERM: "1", VENDOR_EVENT_LOG: events }),
      pool: poolOpts({ idleMs: 1, stopGraceMs: 300 }),
    });
    const { connection } = await h.connect(ALICE);
    const s = await sessionAs(h, ALICE);
    const r = await mcpCall(s.client, { tool: "spawn_grandchild", on_behalf_of: ALICE });
    const grandchild = firstJson<{ pid: number }>(r.text).pid;
    const pid = h.broker.pool.pidOf(connection.id)!;
    expect(envOf(pid).VENDOR_IGNORE_SIGTERM).toBe("1");
    expect(readFileSync(events, "utf8")).toContain(`start ${pid}`);
    h.clock.advance(1);
    const t0 = Date.now();
    expect(await h.broker.pool.reapIdle()).toBe(1);
    // It outlived stdin close and SIGTERM (one grace period each) before SIGKILL ended it.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(550);
    expect(isAlive(pid)).toBe(false);
    expect(await waitDead([grandchild])).toEqual([]);
  });
});

describe.concurrent("shutdown and crash recovery", () => {
  it("leaves zero processes behind after close: children, grandchildren, a hung call and all", async (ctx) => {
    const h = await makeHarness({
      registryDoc: fixtureRegistryDoc({ VENDOR_IGNORE_SIGTERM: "1" }),
      pool: poolOpts({ stopGraceMs: 200 }),
    });
    let closed = false;
    ctx.onTestFinished(async () => {
      if (!closed) await h.close();
    });
    const a = await h.connect(ALICE);
    const b = await h.connect(BOB);
    const [sa, sb] = await Promise.all([sessionAs(h, ALICE), sessionAs(h, BOB)]);
    const r = await mcpCall(sa.client, { tool: "spawn_grandchild", on_behalf_of: ALICE });
    const grandchild = firstJson<{ pid: number }>(r.text).pid;
    const hung = mcpCall(sb.client, { tool: "hang", on_behalf_of: BOB }).catch(() => undefined);
    expect(
      await waitFor(() => h.broker.pool.stats().leased === 1 && h.broker.pool.pidOf(b.connection.id) !== undefined),
    ).toBe(true);
    const pids = [h.broker.pool.pidOf(a.connection.id)!, h.broker.pool.pidOf(b.connection.id)!, grandchild];
    // The scan sees them while they run (so a zero later means something).
    expect(
      processesReferencing([h.dir, VENDOR_STDIO_PATH])
        .filter((p) => pids.includes(p))
        .sort(),
    ).toEqual([...pids].sort());
    await h.close();
    closed = true;
    await hung;
    expect(await waitDead(pids, 2_000)).toEqual([]);
    expect(processesReferencing([h.dir])).toEqual([]);
    for (const p of pids) expect(isAlive(p)).toBe(false);
  });

  it("ChildLedger.sweep kills what a crashed previous run left (whole process groups), and nothing else", async (ctx) => {
    const dir = tempDir(ctx);
    const ledgerDir = path.join(dir, "children");
    const killAtEnd = (pgid: number) =>
      ctx.onTestFinished(() => {
        try {
          process.kill(-pgid, "SIGKILL");
        } catch {
          // already gone
        }
      });
    // Vendors started the way the broker starts them (own process group), each with a grandchild.
    // They ignore stdin EOF and SIGTERM, like real vendors that do not watch stdin.
    const [survivor, orphaned] = await Promise.all([startDetachedVendor(dir), startDetachedVendor(dir)]);
    killAtEnd(survivor.pid);
    killAtEnd(orphaned.pid);
    for (const v of [survivor, orphaned]) expect(processGroup(v.grandchild)).toBe(v.pid);

    const previousRun = new ChildLedger(ledgerDir);
    previousRun.record(survivor.pid, "conn_survivor");
    previousRun.record(orphaned.pid, "conn_orphaned");
    // The previous broker dies without stopping anything: its pipe ends close, the vendors keep running.
    for (const v of [survivor, orphaned]) v.abandon();
    // One vendor's leader exits on its own but leaves its grandchild behind in its group.
    process.kill(orphaned.pid, "SIGKILL");
    // Its death (observed above) is the one event that could take the others with it: no wait beyond it.
    expect(await waitDead([orphaned.pid])).toEqual([]);
    expect(isAlive(survivor.pid)).toBe(true);
    expect(isAlive(survivor.grandchild)).toBe(true);
    expect(isAlive(orphaned.grandchild)).toBe(true);

    // Pid reuse: a ledger pid that now names another process group leader, which started after
    // (the realistic case) or before the recorded child. Neither is ours to kill.
    const bystanders = [spawnBystander(), spawnBystander()];
    for (const b of bystanders) killAtEnd(b);
    expect(await waitFor(() => bystanders.every((b) => processStartTicks(b) !== undefined))).toBe(true);
    const [later, earlier] = bystanders as [number, number];
    writeFileSync(
      path.join(ledgerDir, `${later}.json`),
      JSON.stringify({ pid: later, startTicks: processStartTicks(later)! - 1, connectionId: "conn_reused_later" }),
    );
    writeFileSync(
      path.join(ledgerDir, `${earlier}.json`),
      JSON.stringify({
        pid: earlier,
        startTicks: processStartTicks(earlier)! + 1,
        connectionId: "conn_reused_earlier",
      }),
    );
    // A record torn by a crash mid-write is dropped, not trusted.
    writeFileSync(path.join(ledgerDir, "999999.json"), '{"pid": 9');

    // The survivor's whole group (leader, grandchild, tsx's esbuild service) and the orphan's grandchild.
    const ours = [...groupMembers(survivor.pid), ...groupMembers(orphaned.pid)];
    expect(ours).toEqual(expect.arrayContaining([survivor.pid, survivor.grandchild, orphaned.grandchild]));
    const nextRun = new ChildLedger(ledgerDir);
    expect(nextRun.sweep()).toBeGreaterThanOrEqual(3);
    expect(await waitDead(ours)).toEqual([]);
    for (const b of bystanders) expect(isAlive(b)).toBe(true);
    expect(readdirSync(ledgerDir)).toEqual([]);
  });
});

describe.concurrent("child environment, cancellation and progress", () => {
  it("gives each connection a private HOME and TMPDIR under the run dir, removed when its child exits", async (ctx) => {
    const h = await harness(ctx);
    const a = await h.connect(ALICE);
    const b = await h.connect(BOB);
    const [sa, sb] = await Promise.all([sessionAs(h, ALICE), sessionAs(h, BOB)]);
    type Dump = { env: Record<string, string>; cwd: string; homedir: string; tmpdir: string };
    const [ra, rb] = await Promise.all([
      mcpCall(sa.client, { tool: "env_dump", on_behalf_of: ALICE }),
      mcpCall(sb.client, { tool: "env_dump", on_behalf_of: BOB }),
    ]);
    const da = firstJson<Dump>(ra.text);
    const db = firstJson<Dump>(rb.text);
    const vendors = path.join(h.dir, "run", "vendors");
    for (const [d, id] of [
      [da, a.connection.id],
      [db, b.connection.id],
    ] as const) {
      expect(d.env.HOME).toBe(d.homedir);
      expect(d.env.TMPDIR).toBe(d.tmpdir);
      expect(d.cwd).toBe(d.homedir);
      expect(path.dirname(path.dirname(d.homedir))).toBe(vendors);
      expect(path.basename(path.dirname(d.homedir)).startsWith(`${id}-`)).toBe(true);
      expect(path.dirname(d.tmpdir)).toBe(path.dirname(d.homedir));
      expect(existsSync(d.homedir)).toBe(true);
      expect(existsSync(d.tmpdir)).toBe(true);
    }
    expect(da.homedir).not.toBe(db.homedir);
    expect(da.tmpdir).not.toBe(db.tmpdir);

    // Killed (revoke) or stopped (drop/close): either way its private dirs go with it.
    await h.lifecycle.revoke(a.connection.id, ALICE, "test");
    expect(existsSync(path.dirname(da.homedir))).toBe(false);
    expect(existsSync(db.homedir)).toBe(true);
    await h.broker.pool.drop(b.connection.id, "close");
    expect(existsSync(path.dirname(db.homedir))).toBe(false);
    expect(readdirSync(vendors)).toEqual([]);
  });

  it("cancellation from the MCP client reaches the vendor; the child survives and is reused", async (ctx) => {
    const dir = tempDir(ctx);
    const events = path.join(dir, "events.log");
    // A call timeout far beyond the test, so only the client's abort can cancel the vendor's call.
    const h = await harness(ctx, {
      registryDoc: fixtureRegistryDoc({ VENDOR_EVENT_LOG: events }),
      callTimeoutMs: 120_000,
    });
    const { connection } = await h.connect(ALICE);
    const s = await sessionAs(h, ALICE);
    const ac = new AbortController();
    let progressed!: () => void;
    const firstProgress = new Promise<void>((r) => (progressed = r));
    const call = mcpCall(
      s.client,
      { tool: "slow", args: { steps: 300, delayMs: 100 }, on_behalf_of: ALICE },
      { signal: ac.signal, onprogress: () => progressed() },
    );
    await firstProgress;
    const pid = h.broker.pool.pidOf(connection.id)!;
    ac.abort();
    await expect(call).rejects.toThrow();
    const cancelled = () => (existsSync(events) ? readFileSync(events, "utf8") : "");
    expect(await waitFor(() => /^cancelled /m.test(cancelled()), 5_000)).toBe(true);
    // The broker records the call as cancelled.
    await until(
      async () => (await h.store.audit.query({ event: "call" })).some((e) => e.errorCode === "cancelled"),
      5_000,
      "the call audited as cancelled",
    );
    expect(isAlive(pid)).toBe(true);
    const again = await mcpCall(s.client, { tool: "echo", args: { text: "still here" }, on_behalf_of: ALICE });
    expect(again.text).toContain("still here");
    expect(h.broker.pool.pidOf(connection.id)).toBe(pid);
  });

  it("progress notifications from the vendor reach the MCP client", async (ctx) => {
    const h = await harness(ctx);
    await h.connect(ALICE);
    const s = await sessionAs(h, ALICE);
    const seen: { progress: number; total?: number | undefined; message?: string | undefined }[] = [];
    const r = await mcpCall(
      s.client,
      { tool: "slow", args: { steps: 3, delayMs: 60 }, on_behalf_of: ALICE },
      { onprogress: (p) => seen.push(p) },
    );
    expect(r.text).toContain("done");
    expect(seen.map((p) => p.progress)).toEqual([1, 2, 3]);
    expect(seen.every((p) => p.total === 3)).toBe(true);
    expect(seen.map((p) => p.message)).toEqual(["step 1/3", "step 2/3", "step 3/3"]);
  });
});

/** Starts the fixture vendor detached (own group) with a grandchild; `abandon` drops our ends of its pipes. */
async function startDetachedVendor(dir: string): Promise<{ pid: number; grandchild: number; abandon(): void }> {
  const child = spawn(process.execPath, ["--import", TSX_LOADER, VENDOR_STDIO_PATH], {
    detached: true,
    stdio: ["pipe", "pipe", "ignore"],
    cwd: dir,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, TMPDIR: dir, VENDOR_IGNORE_SIGTERM: "1" },
  });
  const grandchild = await spawnGrandchildOver(child);
  return {
    pid: child.pid!,
    grandchild,
    abandon: () => {
      child.stdin!.destroy();
      child.stdout!.destroy();
      child.unref();
    },
  };
}

/** A long-lived process leading its own process group; returns its pid. */
function spawnBystander(): number {
  const p = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { detached: true, stdio: "ignore" });
  p.unref();
  return p.pid!;
}

/** Speaks raw JSON-RPC to a fixture child: initialize, then spawn_grandchild; returns the grandchild's pid. */
async function spawnGrandchildOver(child: ReturnType<typeof spawn>): Promise<number> {
  const lines = createInterface({ input: child.stdout! });
  type Response = { id?: number; result?: { content?: { text?: string }[] } };
  const responses = new Map<number, (msg: Response) => void>();
  lines.on("line", (line) => {
    try {
      const msg = JSON.parse(line) as Response;
      if (typeof msg.id === "number") responses.get(msg.id)?.(msg);
    } catch {
      // not a JSON-RPC line
    }
  });
  const request = (id: number, method: string, params: unknown) =>
    new Promise<Response>((resolve) => {
      responses.set(id, resolve);
      child.stdin!.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    });
  await request(1, "initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "ledger-test", version: "1" },
  });
  child.stdin!.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
  const r = await request(2, "tools/call", { name: "spawn_grandchild", arguments: {} });
  lines.close();
  return (JSON.parse(r.result?.content?.[0]?.text ?? "{}") as { pid: number }).pid;
}
