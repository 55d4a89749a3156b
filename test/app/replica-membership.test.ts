// Membership across replicas: two Slack-mode replicas (real Bolt over HTTP, one fake Slack Web API)
// on one real PostgreSQL. Slack delivers a member_left_channel event to one replica only; the
// other replica's cached roster must go too, so its next check sees the leave at once instead of
// after the cache TTL (set to an hour here, so only the signal can pass the test).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { type FakeSlack, startFakeSlack } from "../fixtures/slack/fake-slack-api.js";
import { eventCallback, postSlackEvent } from "../fixtures/slack/signed-request.js";
import { fixtureRegistryDoc } from "../integration/broker-harness.js";
import { testAppConfig } from "../support/app-config.js";
import { type PgCluster, startPostgres } from "../support/postgres.js";

const ALICE = "UALICE01";
const BOB = "UBOB0002";
const CHANNEL = "C0THREAD1";
const SECRET = `signing-secret-${randomBytes(8).toString("hex")}`;
let cluster: PgCluster;
let fake: FakeSlack;
const dirs: string[] = [];
let apps: RunningApp[] = [];

beforeAll(async () => {
  cluster = await startPostgres();
  fake = await startFakeSlack({ admins: [] });
});
afterEach(async () => {
  for (const a of apps) await a.close();
  apps = [];
});
afterAll(async () => {
  await fake?.close();
  await cluster?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function replica(url: string, key: string): Promise<RunningApp> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-replica-slack-"));
  dirs.push(dir);
  const config = testAppConfig(dir, `host-token-${"x".repeat(32)}`, {
    SLAUDE_DATABASE_URL: url,
    SLAUDE_ENCRYPTION_KEY: key,
    SLACK_BOT_TOKEN: fake.botToken,
    SLACK_SIGNING_SECRET: SECRET,
    SLACK_API_URL: fake.apiUrl,
    SLAUDE_MEMBERSHIP_CACHE_SECONDS: "3600",
  });
  const app = await startApp({
    config,
    log: memoryLogger("debug"),
    registry: parseRegistry(fixtureRegistryDoc(), "test"),
  });
  apps.push(app);
  return app;
}

describe("membership caches across replicas", () => {
  it("a member_left_channel event delivered to replica A invalidates replica B's cached roster", async () => {
    const url = await cluster.createDatabase();
    const key = randomBytes(32).toString("base64");
    const a = await replica(url, key);
    const b = await replica(url, key);
    fake.setMembers(CHANNEL, [ALICE, BOB]);
    const team = fake.teamId;
    expect(await b.broker.deps.membership.isMember(team, CHANNEL, BOB)).toBe(true);
    const reads = fake.callsOf("conversations.members").length;

    // Bob leaves; B still holds the roster it read (an hour's TTL).
    fake.setMembers(CHANNEL, [ALICE]);
    expect(await b.broker.deps.membership.isMember(team, CHANNEL, BOB)).toBe(true);
    expect(fake.callsOf("conversations.members").length).toBe(reads);

    // Slack tells replica A only (the load balancer sent the event there).
    const res = await postSlackEvent(
      `${a.url}/slack/events`,
      SECRET,
      eventCallback(
        { teamId: team },
        { type: "member_left_channel", user: BOB, channel: CHANNEL, channel_type: "C", team },
      ),
    );
    expect(res.status).toBe(200);
    await vi.waitFor(async () => expect(await b.broker.deps.membership.isMember(team, CHANNEL, BOB)).toBe(false), {
      timeout: 10_000,
      interval: 25,
    });
    expect(fake.callsOf("conversations.members").length).toBeGreaterThan(reads);
    expect(await b.broker.deps.membership.isMember(team, CHANNEL, ALICE)).toBe(true);
  });
});
