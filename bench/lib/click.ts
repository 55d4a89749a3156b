// The owner's click on a Slack approval card, as Slack sends it: a signed block_actions POST.
import type { FakeSlack } from "../../test/fixtures/slack/fake-slack-api.js";
import { blockActionPayload, postSlackInteraction } from "../../test/fixtures/slack/signed-request.js";

type Action = "approval_allow_thread" | "approval_allow_once";

/** Waits for `owner`'s card number `index` (0-based) in their DM and clicks `action` on it. */
export async function clickCard(
  fake: FakeSlack,
  brokerUrl: string,
  signingSecret: string,
  owner: string,
  index: number,
  action: Action,
): Promise<{ sent: Promise<unknown>; t0: number }> {
  const dm = `D${owner}`;
  const cards = () =>
    fake.callsOf("chat.postMessage").filter((c) => c.args.channel === dm && Array.isArray(c.args.blocks));
  await fake.waitFor("chat.postMessage", () => cards().length > index, 30_000);
  const post = cards()[index]!;
  const actions = (post.args.blocks as { type: string; elements?: { action_id: string; value: string }[] }[]).find(
    (b) => b.type === "actions",
  );
  const button = actions?.elements?.find((e) => e.action_id === action);
  if (!button) throw new Error(`approval card without ${action}`);
  const t0 = performance.now();
  const sent = postSlackInteraction(
    `${brokerUrl}/slack/events`,
    signingSecret,
    blockActionPayload({
      userId: owner,
      teamId: fake.teamId,
      actionId: action,
      value: button.value,
      channelId: dm,
      messageTs: String(post.response?.ts),
      responseUrl: fake.responseUrl(`bench-${owner}-${index}`),
    }),
  ).then((r) => {
    if (r.status !== 200) throw new Error(`/slack/events answered ${r.status}`);
  });
  return { sent, t0 };
}
