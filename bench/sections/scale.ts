// Cost in the number of stored connections: the same shared and borrowed calls and the same
// connections_list against a broker holding few connections and one holding many, rotated.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { ThreadRef } from "../../src/domain/thread.js";
import type { FakeSlack } from "../../test/fixtures/slack/fake-slack-api.js";
import { type BrokerProc, cliAdd, launchBroker, others, seed } from "../lib/broker-proc.js";
import { clickCard } from "../lib/click.js";
import { pct, type Spread, spread, timeCalls } from "../lib/stats.js";

interface Side {
  readonly rows: number;
  readonly broker: BrokerProc;
  readonly shared: () => Promise<unknown>;
  readonly borrowed: () => Promise<unknown>;
  readonly list: () => Promise<unknown>;
  readonly clients: Client[];
}

export interface ScaleResult {
  readonly small: number;
  readonly large: number;
  readonly seedSeconds: number;
  readonly sharedRatio: Spread;
  readonly borrowedRatio: Spread;
  readonly p50: Record<"small" | "large", { shared: number; borrowed: number; list: number }>;
}

function mustRun(kind: string, want: string) {
  return (x: unknown) => {
    const r = x as { isError?: boolean; structuredContent?: unknown; content?: unknown };
    const ranAs = (r.structuredContent as { ranAs?: string } | undefined)?.ranAs;
    if (r.isError || ranAs !== want)
      throw new Error(`${kind} call did not run as ${want}: ${JSON.stringify(r.content)}`);
    return r;
  };
}

async function side(
  fake: FakeSlack,
  dir: string,
  signingSecret: string,
  rows: number,
  tag: string,
): Promise<Side & { seedMs: number }> {
  const team = fake.teamId;
  const channel = `CSCALE${tag}`;
  const [alice, bob, nobody] = [`UA${tag}`, `UB${tag}`, `UN${tag}`];
  fake.setMembers(channel, [alice, bob, nobody]);
  const borrowThread: ThreadRef = { teamId: team, channelId: channel, threadTs: "1700000100.000001" };
  const sharedThread: ThreadRef = { teamId: team, channelId: channel, threadTs: "1700000100.000002" };
  let seedMs = 0;
  const broker = await launchBroker(
    { dir, slack: { apiUrl: fake.apiUrl, botToken: fake.botToken, signingSecret } },
    async (env) => {
      const t = performance.now();
      await seed(env, team, others(team, rows));
      seedMs = performance.now() - t;
      await cliAdd(env, { team, scope: "shared", token: `shared-${tag}` });
      await cliAdd(env, { team, scope: "thread", owner: alice, thread: borrowThread, token: `alice-${tag}` });
    },
  );
  // Alice speaks in her thread first (a participant), then Bob, who borrows her connection.
  await broker.turn(borrowThread, alice);
  await broker.turn(borrowThread, bob);
  const bobs = await broker.session(borrowThread);
  const first = bobs.callTool({
    name: "mcp_call",
    arguments: { service: "echo", tool: "echo", args: { text: "hi" }, on_behalf_of: bob },
  });
  const click = await clickCard(fake, broker.url, signingSecret, alice, 0, "approval_allow_thread");
  await click.sent;
  mustRun("first borrowed", "approval_thread")(await first);
  await broker.turn(sharedThread, nobody);
  const nobodys = await broker.session(sharedThread);
  return {
    rows,
    seedMs,
    broker,
    clients: [bobs, nobodys],
    shared: async () =>
      mustRun(
        "shared",
        "shared",
      )(
        await nobodys.callTool({
          name: "mcp_call",
          arguments: { service: "echo", tool: "echo", args: { text: "s" }, on_behalf_of: nobody },
        }),
      ),
    borrowed: async () =>
      mustRun(
        "borrowed",
        "grant",
      )(
        await bobs.callTool({
          name: "mcp_call",
          arguments: { service: "echo", tool: "echo", args: { text: "b" }, on_behalf_of: bob },
        }),
      ),
    list: () => bobs.callTool({ name: "connections_list", arguments: {} }),
  };
}

export async function scale(
  fake: FakeSlack,
  dirs: [string, string],
  signingSecret: string,
  rows: [number, number],
  rounds: number,
  n: number,
): Promise<ScaleResult> {
  const sides = [
    await side(fake, dirs[0], signingSecret, rows[0], "S"),
    await side(fake, dirs[1], signingSecret, rows[1], "L"),
  ] as const;
  try {
    const acc = sides.map(() => ({ shared: [] as number[], borrowed: [] as number[], list: [] as number[] }));
    for (const s of sides) for (const f of [s.shared, s.borrowed, s.list]) await timeCalls(f, 20);
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < 2; i++) {
        const k = (r + i) % 2;
        const s = sides[k]!;
        acc[k]!.shared.push(pct(await timeCalls(s.shared, n), 50));
        acc[k]!.borrowed.push(pct(await timeCalls(s.borrowed, n), 50));
        acc[k]!.list.push(pct(await timeCalls(s.list, n), 50));
      }
    }
    const ratio = (key: "shared" | "borrowed") => spread(acc[1]![key].map((x, j) => x / acc[0]![key][j]!));
    const p50 = (k: 0 | 1) => ({
      shared: pct(acc[k]!.shared, 50),
      borrowed: pct(acc[k]!.borrowed, 50),
      list: pct(acc[k]!.list, 50),
    });
    return {
      small: rows[0],
      large: rows[1],
      seedSeconds: (sides[0].seedMs + sides[1].seedMs) / 1000,
      sharedRatio: ratio("shared"),
      borrowedRatio: ratio("borrowed"),
      p50: { small: p50(0), large: p50(1) },
    };
  } finally {
    for (const s of sides) {
      for (const c of s.clients) await c.close().catch(() => {});
      await s.broker.stop();
    }
  }
}
