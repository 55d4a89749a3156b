// Two replicas (two startApp instances, each with its own data dir) on one real PostgreSQL: a call
// waiting on A resumes when the owner's decision lands on B, a double click on A and B applies
// once, and a revoke by the real CLI process kills the connection's child on both. The polls that
// would also find these (approval poll, idle reconcile) are set far beyond the test's bounds, so
// only the signals between replicas can make them pass.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { type Clock, ManualClock } from "../../src/clock/clock.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import type { Connection } from "../../src/store/records.js";
import { runBin } from "../cli/run.js";
import {
  ALICE,
  aliceThreadConnection,
  BOB,
  FakeApprovalChannel,
  fixtureRegistryDoc,
  mcpCall,
  THREAD,
} from "../integration/broker-harness.js";
import { testAppConfig } from "../support/app-config.js";
import { type PgCluster, startPostgres } from "../support/postgres.js";

const TOKEN = `host-${randomBytes(8).toString("hex")}`;
const NEVER = 3_600_000; // the polls' interval here: far past every bound below
let cluster: PgCluster;
const dirs: string[] = [];
let apps: RunningApp[] = [];

beforeAll(async () => {
  cluster = await startPostgres();
});
afterEach(async () => {
  for (const a of apps) await a.close();
  apps = [];
});
afterAll(async () => {
  await cluster?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Replica {
  readonly app: RunningApp;
  readonly cards: FakeApprovalChannel;
}

/** A deployment: `n` replicas sharing one fresh database and key, each with its own data dir. */
async function deployment(n: number, clock?: Clock): Promise<{ url: string; key: string; replicas: Replica[] }> {
  const url = await cluster.createDatabase();
  const key = randomBytes(32).toString("base64");
  const replicas: Replica[] = [];
  for (let i = 0; i < n; i++) {
    const dir = mkdtempSync(path.join(os.tmpdir(), `slaude-replica${i}-`));
    dirs.push(dir);
    const cards = new FakeApprovalChannel();
    const app = await startApp({
      config: testAppConfig(dir, TOKEN, { SLAUDE_DATABASE_URL: url, SLAUDE_ENCRYPTION_KEY: key }),
      log: memoryLogger("debug"),
      ...(clock ? { clock } : {}),
      registry: parseRegistry(fixtureRegistryDoc(), "x"),
      membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE, BOB),
      approvalChannel: cards,
      approvalPollIntervalMs: NEVER,
      idleReapIntervalMs: NEVER,
      reapIntervalMs: NEVER,
    });
    apps.push(app);
    replicas.push({ app, cards });
  }
  return { url, key, replicas };
}

function aliceConnection(app: RunningApp, ttlMs?: number): Promise<Connection> {
  return aliceThreadConnection(app.lifecycle, { ttlMs });
}

/** Runs one call as the owner on each replica, so each holds a live child; returns their pids. */
async function warmChildren(replicas: readonly Replica[], conn: Connection): Promise<number[]> {
  const pids: number[] = [];
  for (const r of replicas) {
    const alice = await session(r.app, ALICE);
    try {
      const res = await mcpCall(alice.client, { tool: "read_item", args: { id: "w" }, on_behalf_of: ALICE });
      expect(res.structured.status, res.text).toBe("ok");
    } finally {
      await alice.close();
    }
    const pid = r.app.broker.pool.pidOf(conn.id);
    expect(pid).toBeTypeOf("number");
    pids.push(pid!);
  }
  expect(new Set(pids).size).toBe(replicas.length);
  expect(pids.every(alive)).toBe(true);
  return pids;
}

/** An in-process MCP session on `app` whose caller is `user` in THREAD. */
async function session(app: RunningApp, user: string) {
  const s = await app.broker.connectEmbedded(() => ({ ...THREAD, userId: user }));
  return s;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// Generous: each test spawns vendor children (and one a CLI process) on a shared, loaded machine.
describe("signals between replicas on PostgreSQL", { timeout: 240_000 }, () => {
  it("a call waiting on replica A resumes when the owner's click lands on replica B", async () => {
    const { replicas } = await deployment(2);
    const [a, b] = replicas as [Replica, Replica];
    const conn = await aliceConnection(a.app);
    // The owner's own call first: the vendor child is warm, so the delay measured below is the resume alone.
    const alice = await session(a.app, ALICE);
    expect(
      (await mcpCall(alice.client, { tool: "read_item", args: { id: "x0" }, on_behalf_of: ALICE })).structured.status,
    ).toBe("ok");
    await alice.close();
    const bob = await session(a.app, BOB);
    try {
      const call = mcpCall(bob.client, { tool: "read_item", args: { id: "x1" }, on_behalf_of: BOB });
      call.catch(() => {}); // awaited below; a failed test closes the session under it
      const { approval } = await a.cards.nextCard();
      expect(approval).toMatchObject({ connectionId: conn.id, borrowerUserId: BOB, status: "pending" });
      // B never showed this card: the click reaches B (a Slack request routed there), the call waits on A.
      expect(await b.app.broker.approvals.decide(approval.id, approval.nonce, ALICE, "allowed_once")).toBe("applied");
      const clicked = performance.now();
      const r = await call;
      const delayMs = performance.now() - clicked;
      expect(r.isError, r.text).toBe(false);
      expect(r.structured.status).toBe("ok");
      // Without the signal the call would wait for the (disabled) poll until its approval expired.
      expect(delayMs).toBeLessThan(5_000);
      console.log(`[replica-signals] decision on B -> call on A resumed in ${delayMs.toFixed(0)} ms`);
      const events = (await a.app.store.audit.query({ connectionId: conn.id })).map(
        (e) => `${e.event}:${e.decision ?? ""}`,
      );
      expect(events.filter((e) => e === "approval_decided:consumed")).toHaveLength(1);
    } finally {
      await bob.close();
    }
  });

  it("the same click delivered to A and B at once applies once: one decision, one consumption, one grant, one vendor call", async () => {
    const { replicas } = await deployment(2);
    const [a, b] = replicas as [Replica, Replica];
    const conn = await aliceConnection(a.app);
    const bob = await session(a.app, BOB);
    try {
      const call = mcpCall(bob.client, { tool: "read_item", args: { id: "x2" }, on_behalf_of: BOB });
      call.catch(() => {}); // awaited below; a failed test closes the session under it
      const { approval } = await a.cards.nextCard();
      const results = await Promise.all([
        a.app.broker.approvals.decide(approval.id, approval.nonce, ALICE, "allowed_thread"),
        b.app.broker.approvals.decide(approval.id, approval.nonce, ALICE, "allowed_thread"),
      ]);
      expect(results.filter((r) => r === "applied")).toHaveLength(1);
      expect(results.filter((r) => r === "already_decided")).toHaveLength(1);
      const r = await call;
      expect(r.structured.status, r.text).toBe("ok");
      const rows = await a.app.store.audit.query({ connectionId: conn.id });
      const count = (event: string, decision?: string) =>
        rows.filter((e) => e.event === event && (decision === undefined || e.decision === decision)).length;
      expect(count("approval_decided", "allowed_thread")).toBe(1);
      expect(count("approval_decided", "consumed")).toBe(1);
      expect(count("grant_created")).toBe(1);
      expect(count("approval_rejected_click", "already_decided")).toBe(1);
      expect(count("call")).toBe(1);
      const grants = await a.app.store.grants.list({ connectionId: conn.id });
      expect(grants).toHaveLength(1);
    } finally {
      await bob.close();
    }
  });

  it("a decision whose signal was lost is still found without the poll: the re-LISTEN after a lost connection re-reads", async () => {
    const { url, replicas } = await deployment(2);
    const [a, b] = replicas as [Replica, Replica];
    const conn = await aliceConnection(a.app);
    const bob = await session(a.app, BOB);
    try {
      const call = mcpCall(bob.client, { tool: "read_item", args: { id: "x4" }, on_behalf_of: BOB });
      call.catch(() => {}); // awaited below; a failed test closes the session under it
      const { approval } = await a.cards.nextCard();
      // Written straight to the database, as if its notification had been lost: no signal is sent.
      const at = Date.now();
      expect(await b.app.store.approvals.decide(approval.id, { status: "allowed_once", by: ALICE, at }, [])).toBe(true);
      // The LISTEN connections die (a server restart, a network cut); the replicas reconnect and re-read.
      const db = new URL(url).pathname.slice(1);
      await cluster.superQuery(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${db}' AND query LIKE 'LISTEN %'`,
      );
      const r = await call;
      expect(r.structured.status, r.text).toBe("ok");
      expect((await a.app.store.audit.query({ connectionId: conn.id })).filter((e) => e.event === "call")).toHaveLength(
        1,
      );
    } finally {
      await bob.close();
    }
  });

  it("a revoke by the CLI process kills the connection's child on every replica", async () => {
    const { url, key, replicas } = await deployment(2);
    const [a, b] = replicas as [Replica, Replica];
    const conn = await aliceConnection(a.app);
    const pids = await warmChildren([a, b], conn);

    const cliDir = mkdtempSync(path.join(os.tmpdir(), "slaude-replica-cli-"));
    dirs.push(cliDir);
    const registryPath = path.join(cliDir, "services.json");
    writeFileSync(registryPath, JSON.stringify(fixtureRegistryDoc()));
    const cli = await runBin(["connections", "revoke", conn.id, "--reason", "left"], {
      SLAUDE_DATABASE_URL: url,
      SLAUDE_ENCRYPTION_KEY: key,
      SLAUDE_DATA_DIR: path.join(cliDir, "data"),
      SLAUDE_REGISTRY_PATH: registryPath,
      USER: "tester",
    });
    expect(cli, cli.stderr).toMatchObject({ code: 0, stdout: `revoked ${conn.id}\n` });
    const exited = performance.now();
    await vi.waitFor(
      () => {
        expect(pids.filter(alive)).toEqual([]);
        expect([a, b].map((r) => r.app.broker.pool.has(conn.id))).toEqual([false, false]);
      },
      { timeout: 10_000, interval: 20 },
    );
    console.log(
      `[replica-signals] CLI revoke exited -> children gone on both replicas in ${(performance.now() - exited).toFixed(0)} ms`,
    );
  });

  it("a TTL expiry reaped by one replica kills the connection's child on the others", async () => {
    const clock = new ManualClock(Date.now());
    const { replicas } = await deployment(2, clock);
    const [a, b] = replicas as [Replica, Replica];
    const conn = await aliceConnection(a.app, 60_000);
    const pids = await warmChildren([a, b], conn);
    // Past the TTL (not past any poll or reaper interval): replica A runs the TTL job, B does not.
    clock.advance(61_000);
    expect(await a.app.lifecycle.reapExpired()).toBe(1);
    await vi.waitFor(() => expect(pids.filter(alive)).toEqual([]), { timeout: 10_000, interval: 20 });
    expect(b.app.broker.pool.has(conn.id)).toBe(false);
  });
});
