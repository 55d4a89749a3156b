// Overload: 16 connections kept busy against a pool capped at 4 children. Counts vendor spawns
// per call (thrash: a child evicted while calls for it wait, then spawned again) and the p99 wait.
import type { ThreadRef } from "../../src/domain/thread.js";
import type { FakeSlack } from "../../test/fixtures/slack/fake-slack-api.js";
import { launchBroker, metricValue, seed } from "../lib/broker-proc.js";
import { pct } from "../lib/stats.js";

export interface OverloadResult {
  readonly calls: number;
  readonly errors: number;
  readonly spawns: number;
  readonly spawnsPerCall: number;
  readonly p50: number;
  readonly p99: number;
}

export async function overload(
  fake: FakeSlack,
  dir: string,
  signingSecret: string,
  perConn: number,
): Promise<OverloadResult> {
  const CONNS = 16;
  const team = fake.teamId;
  const channel = "COVERLOAD";
  const users = Array.from({ length: CONNS }, (_, i) => `UOVER${String(i).padStart(2, "0")}`);
  fake.setMembers(channel, users);
  const threads: ThreadRef[] = users.map((_, i) => ({
    teamId: team,
    channelId: channel,
    threadTs: `1700000200.${String(i).padStart(6, "0")}`,
  }));
  const broker = await launchBroker(
    {
      dir,
      slack: { apiUrl: fake.apiUrl, botToken: fake.botToken, signingSecret },
      env: { SLAUDE_POOL_MAX_CHILDREN: "4", SLAUDE_POOL_ACQUIRE_TIMEOUT_SECONDS: "120" },
    },
    async (env) => {
      await seed(
        env,
        team,
        users.map((owner) => ({ owner })),
      );
    },
  );
  try {
    const sessions = [];
    for (const [i, u] of users.entries()) {
      await broker.turn(threads[i]!, u);
      sessions.push(await broker.session(threads[i]!));
    }
    const before = metricValue(await broker.metrics(), "slaude_vendor_starts");
    const lat: number[] = [];
    let errors = 0;
    await Promise.all(
      sessions.map(async (s, j) => {
        for (let i = 0; i < perConn; i++) {
          const t = performance.now();
          const r = await s.callTool(
            {
              name: "mcp_call",
              arguments: { service: "echo", tool: "slow", args: { ms: 20 }, on_behalf_of: users[j]! },
            },
            undefined,
            { timeout: 180_000 },
          );
          lat.push(performance.now() - t);
          if (r.isError) errors++;
        }
      }),
    );
    const spawns = metricValue(await broker.metrics(), "slaude_vendor_starts") - before;
    for (const s of sessions) await s.close().catch(() => {});
    const calls = CONNS * perConn;
    return { calls, errors, spawns, spawnsPerCall: spawns / calls, p50: pct(lat, 50), p99: pct(lat, 99) };
  } finally {
    await broker.stop();
  }
}
