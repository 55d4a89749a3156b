// Two real apps (replicas) on one PostgreSQL: a replica starting does not expire the approvals other
// replicas' calls are waiting on; the database-wide jobs run on one replica (the /metrics gauge says
// which), a dead replica's pending approval is expired at its own expiry by the leader, and when the
// leader stops the other replica takes its jobs over.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import type { Approval } from "../../src/store/records.js";
import { ALICE, aliceThreadConnection, fixtureRegistryDoc, THREAD } from "../integration/broker-harness.js";
import { testAppConfig } from "../support/app-config.js";
import { type PgCluster, startPostgres } from "../support/postgres.js";

const TOKEN = `host-${randomBytes(8).toString("hex")}`;
let cluster: PgCluster;
const dirs: string[] = [];
const apps: RunningApp[] = [];

beforeAll(async () => {
  cluster = await startPostgres();
});
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
afterAll(async () => {
  await cluster?.stop();
});

/** The deployment's master key: replicas share it (their advisory lock keys are derived from it). */
const KEY = randomBytes(32).toString("base64");

/** One replica: its own data dir, the shared database and key, reapers every 100 ms. */
async function replica(url: string): Promise<{ app: RunningApp; log: ReturnType<typeof memoryLogger> }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-replica-"));
  dirs.push(dir);
  const log = memoryLogger("debug");
  const app = await startApp({
    config: testAppConfig(dir, TOKEN, { SLAUDE_DATABASE_URL: url, SLAUDE_ENCRYPTION_KEY: KEY }),
    log,
    registry: parseRegistry(fixtureRegistryDoc(), "x"),
    reapIntervalMs: 100,
  });
  apps.push(app);
  return { app, log };
}

/** A pending approval as a call waiting on some replica leaves it, expiring at `expiresAt`. */
async function pendingApproval(app: RunningApp, expiresAt: number): Promise<Approval> {
  const conn = await aliceThreadConnection(app.lifecycle, { token: "t" });
  const now = Date.now();
  const a: Approval = {
    id: `appr_${randomBytes(6).toString("hex")}`,
    nonce: randomBytes(16).toString("base64url"),
    connectionId: conn.id,
    teamId: THREAD.teamId,
    channelId: THREAD.channelId,
    threadTs: THREAD.threadTs,
    ownerUserId: ALICE,
    borrowerUserId: "U_BOB",
    service: "vendor",
    tool: "read_item",
    argsHash: "h".repeat(64),
    status: "pending",
    createdAt: now,
    expiresAt,
    decidedAt: null,
    decidedBy: null,
    cardChannel: null,
    cardTs: null,
  };
  await app.store.approvals.create(a, []);
  return a;
}

/** slaude_job_leader{job} of one app: 1, 0, or undefined while not yet reported. */
async function leads(app: RunningApp, job: string): Promise<number | undefined> {
  const m = new RegExp(`^slaude_job_leader\\{job="${job}"\\} (\\d)$`, "m").exec((await app.metrics.text()).body);
  return m ? Number(m[1]) : undefined;
}

describe("replicas on one PostgreSQL: startup and leader-only jobs", () => {
  it("a replica starting leaves other replicas' pending approvals pending", async () => {
    const url = await cluster.createDatabase();
    const a = await replica(url);
    const waiting = await pendingApproval(a.app, Date.now() + 10 * 60_000);
    const b = await replica(url);
    expect((await b.app.store.approvals.get(waiting.id))?.status).toBe("pending");
    expect(b.log.lines.some((l) => l.includes("expired approvals left pending"))).toBe(false);
  });

  it("one replica leads the database jobs; a dead replica's approval expires at its expiry; the other takes over when the leader stops", async () => {
    const url = await cluster.createDatabase();
    const a = await replica(url);
    await expect.poll(() => leads(a.app, "ttl_reaper"), { timeout: 15_000 }).toBe(1);
    const b = await replica(url);
    await expect.poll(() => leads(b.app, "ttl_reaper"), { timeout: 15_000 }).toBe(0);
    for (const job of ["result_reaper", "approval_expiry", "login_reaper"]) {
      expect(await leads(a.app, job)).toBe(1);
      await expect.poll(() => leads(b.app, job), { timeout: 15_000 }).toBe(0);
    }

    // A call that waited on a replica now gone: its approval expires once, at its own expiry.
    const orphan = await pendingApproval(b.app, Date.now() + 300);
    await expect
      .poll(async () => (await b.app.store.approvals.get(orphan.id))?.status, { timeout: 15_000 })
      .toBe("expired");
    const decided = await b.app.store.audit.query({ connectionId: orphan.connectionId, event: "approval_decided" });
    expect(decided.map((r) => r.decision)).toEqual(["expired"]);

    // The leader stops (a deploy, a crash): B leads at its next tick.
    await a.app.close();
    apps.splice(apps.indexOf(a.app), 1);
    await expect.poll(() => leads(b.app, "ttl_reaper"), { timeout: 15_000 }).toBe(1);
    expect(b.log.lines.some((l) => l.includes("leading job on this replica") && l.includes("ttl reaper"))).toBe(true);
  });
});
