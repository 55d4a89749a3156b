// The Slack approval round trip: Bob's call on Alice's connection waits for her; the bench clicks
// Allow once with a signed block_actions POST and times click sent → call result received.
import type { ThreadRef } from "../../src/domain/thread.js";
import type { FakeSlack } from "../../test/fixtures/slack/fake-slack-api.js";
import type { BrokerProc } from "../lib/broker-proc.js";
import { clickCard } from "../lib/click.js";
import { type Spread, spread } from "../lib/stats.js";

export async function approvalRoundTrip(
  fake: FakeSlack,
  b: BrokerProc,
  signingSecret: string,
  thread: ThreadRef,
  owner: string,
  borrower: string,
  n: number,
): Promise<Spread> {
  await b.turn(thread, owner);
  await b.turn(thread, borrower);
  const s = await b.session(thread);
  const times: number[] = [];
  try {
    // One unmeasured round first: it spawns the owner's child, so every measured round finds it warm.
    for (let i = 0; i <= n; i++) {
      const pending = s.callTool({
        name: "mcp_call",
        arguments: { service: "echo", tool: "echo", args: { text: `borrow ${i}` }, on_behalf_of: borrower },
      });
      const click = await clickCard(fake, b.url, signingSecret, owner, i, "approval_allow_once");
      const r = await pending;
      const t1 = performance.now();
      await click.sent;
      const ranAs = (r.structuredContent as { ranAs?: string } | undefined)?.ranAs;
      if (r.isError || ranAs !== "approval_once")
        throw new Error(`approved call did not run as approval_once: ${JSON.stringify(r.content)}`);
      if (i > 0) times.push(t1 - click.t0);
    }
  } finally {
    await s.close().catch(() => {});
  }
  return spread(times);
}
