// Smoke test: the real @slack/web-api WebClient works against the fake Slack Web API.
import { ErrorCode, LogLevel, WebClient } from "@slack/web-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeSlack, startFakeSlack } from "../../fixtures/slack/fake-slack-api.js";

const ADMIN = "U0ADMIN01";
const OWNER = "U0OWNER01";
const ALICE = "U0ALICE01";

// retries: 0 because WebClient otherwise retries HTTP errors and dropped sockets for about 30 minutes.
function clientFor(fake: FakeSlack, token = fake.botToken, extra: { timeout?: number } = {}): WebClient {
  return new WebClient(token, {
    slackApiUrl: fake.apiUrl,
    retryConfig: { retries: 0 },
    logLevel: LogLevel.ERROR,
    ...extra,
  });
}

async function slackError(p: Promise<unknown>): Promise<{ code: string; error?: string; statusCode?: number }> {
  try {
    await p;
  } catch (err) {
    const e = err as { code: string; data?: { error?: string }; statusCode?: number };
    return {
      code: e.code,
      ...(e.data?.error !== undefined ? { error: e.data.error } : {}),
      ...(e.statusCode !== undefined ? { statusCode: e.statusCode } : {}),
    };
  }
  throw new Error("expected the call to fail");
}

describe("fake Slack Web API with the real WebClient", () => {
  let fake: FakeSlack;
  let client: WebClient;

  beforeAll(async () => {
    fake = await startFakeSlack({ admins: [ADMIN], owners: [OWNER] });
    client = clientFor(fake);
  });
  afterAll(async () => {
    await fake.close();
  });

  it("auth.test answers with the bot identity and records the bearer token", async () => {
    expect(fake.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/$/);
    const r = await client.auth.test();
    expect(r).toMatchObject({ ok: true, team_id: fake.teamId, user_id: fake.botUserId, bot_id: fake.botId });
    expect(fake.callsOf("auth.test").at(-1)).toMatchObject({ method: "auth.test", token: fake.botToken, args: {} });
  });

  it("conversations.open returns the DM channel", async () => {
    const r = await client.conversations.open({ users: ALICE });
    expect(r.channel?.id).toBe(`D${ALICE}`);
    expect(fake.callsOf("conversations.open").at(-1)?.args).toEqual({ users: ALICE });
  });

  it("chat.postMessage / update / delete keep message state; blocks arrive parsed", async () => {
    const blocks = [{ type: "section", text: { type: "mrkdwn", text: "*approve?*" } }];
    const a = await client.chat.postMessage({ channel: "C0APPROVE", text: "approve?", blocks });
    const b = await client.chat.postMessage({ channel: "C0APPROVE", text: "reply", thread_ts: a.ts as string });
    expect(a).toMatchObject({
      ok: true,
      channel: "C0APPROVE",
      message: { text: "approve?", bot_id: fake.botId, blocks },
    });
    expect(a.ts).toMatch(/^\d{10}\.\d{6}$/);
    expect(Number(b.ts)).toBeGreaterThan(Number(a.ts));
    expect(fake.callsOf("chat.postMessage").at(-2)?.args).toEqual({ channel: "C0APPROVE", text: "approve?", blocks });
    expect(fake.messageAt("C0APPROVE", b.ts as string)?.threadTs).toBe(a.ts);

    // Posting to a user id lands in that user's DM, as on Slack.
    const dm = await client.chat.postMessage({ channel: ALICE, text: "hi" });
    expect(dm.channel).toBe(`D${ALICE}`);

    const u = await client.chat.update({ channel: "C0APPROVE", ts: a.ts as string, text: "approved", blocks: [] });
    expect(u).toMatchObject({ ok: true, ts: a.ts, text: "approved" });
    expect(fake.messageAt("C0APPROVE", a.ts as string)).toMatchObject({ text: "approved", blocks: [], edits: 1 });
    expect(await slackError(client.chat.update({ channel: "C0APPROVE", ts: "1.000000", text: "x" }))).toMatchObject({
      code: ErrorCode.PlatformError,
      error: "message_not_found",
    });

    expect(await client.chat.delete({ channel: "C0APPROVE", ts: b.ts as string })).toMatchObject({
      ok: true,
      ts: b.ts,
    });
    expect(fake.messageAt("C0APPROVE", b.ts as string)?.deleted).toBe(true);
    expect(await slackError(client.chat.delete({ channel: "C0APPROVE", ts: b.ts as string }))).toMatchObject({
      error: "message_not_found",
    });
    expect(await slackError(client.chat.postMessage({ channel: "C0APPROVE", text: "" }))).toMatchObject({
      error: "no_text",
    });
  });

  it("chat.postEphemeral returns message_ts and respects channel membership", async () => {
    fake.setMembers("C0EPH", [ALICE]);
    const r = await client.chat.postEphemeral({ channel: "C0EPH", user: ALICE, text: "only you" });
    expect(r.message_ts).toMatch(/^\d{10}\.\d{6}$/);
    expect(fake.ephemerals.at(-1)).toMatchObject({ channel: "C0EPH", user: ALICE, text: "only you" });
    expect(await slackError(client.chat.postEphemeral({ channel: "C0EPH", user: ADMIN, text: "x" }))).toMatchObject({
      error: "user_not_in_channel",
    });
  });

  it("conversations.members paginates with next_cursor (page size 2) and knows unknown channels", async () => {
    const five = ["U0M1", "U0M2", "U0M3", "U0M4", "U0M5"];
    fake.setMembers("C0MEMBERS", five);
    fake.clearCalls();
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const r = await client.conversations.members({
        channel: "C0MEMBERS",
        limit: 1000,
        ...(cursor ? { cursor } : {}),
      });
      seen.push(...(r.members ?? []));
      cursor = r.response_metadata?.next_cursor || undefined;
    } while (cursor);
    expect(seen).toEqual(five);
    expect(fake.callsOf("conversations.members")).toHaveLength(3);

    // WebClient's own paginate() understands the cursor too.
    const viaPaginate: string[] = [];
    for await (const page of client.paginate("conversations.members", { channel: "C0MEMBERS" })) {
      viaPaginate.push(...((page as { members?: string[] }).members ?? []));
    }
    expect(viaPaginate).toEqual(five);

    expect(await slackError(client.conversations.members({ channel: "C0NOPE" }))).toMatchObject({
      error: "channel_not_found",
    });
    expect(await slackError(client.conversations.members({ channel: "C0MEMBERS", cursor: "garbage" }))).toMatchObject({
      error: "invalid_cursor",
    });
  });

  it("users.info reports admins and owners", async () => {
    expect((await client.users.info({ user: ADMIN })).user).toMatchObject({
      id: ADMIN,
      is_admin: true,
      is_owner: false,
    });
    expect((await client.users.info({ user: OWNER })).user).toMatchObject({
      id: OWNER,
      is_admin: true,
      is_owner: true,
    });
    expect((await client.users.info({ user: ALICE })).user).toMatchObject({
      id: ALICE,
      is_admin: false,
      is_owner: false,
      is_bot: false,
    });
    expect((await client.users.info({ user: fake.botUserId })).user).toMatchObject({ is_bot: true });
    expect(await slackError(client.users.info({ user: "nobody" }))).toMatchObject({ error: "user_not_found" });
  });

  it("views.publish stores the home view per user and enforces hash", async () => {
    const view = { type: "home" as const, blocks: [{ type: "section", text: { type: "mrkdwn", text: "hello" } }] };
    const r = await client.views.publish({ user_id: ALICE, view });
    expect(r.view).toMatchObject({ type: "home", blocks: view.blocks, team_id: fake.teamId });
    expect(fake.homeViews.get(ALICE)).toEqual(view);
    expect(fake.callsOf("views.publish").at(-1)?.args.view).toEqual(view);
    expect(await slackError(client.views.publish({ user_id: ALICE, view, hash: "stale" }))).toMatchObject({
      error: "hash_conflict",
    });
    await client.views.publish({ user_id: ALICE, view, hash: r.view?.hash as string });
    // Block Kit's limits, as Slack enforces them: at most 100 blocks, section text at most 3,000 characters.
    expect(
      await slackError(
        client.views.publish({
          user_id: ALICE,
          view: { type: "home", blocks: Array.from({ length: 101 }, () => ({ type: "divider" })) },
        }),
      ),
    ).toMatchObject({ error: "invalid_arguments" });
    expect(
      await slackError(
        client.views.publish({
          user_id: ALICE,
          view: { type: "home", blocks: [{ type: "section", text: { type: "mrkdwn", text: "x".repeat(3001) } }] },
        }),
      ),
    ).toMatchObject({ error: "invalid_arguments" });
    expect(fake.homeViews.get(ALICE)).toEqual(view);
  });

  it("views.open exchanges a fresh trigger once for a valid modal", async () => {
    const trigger = (ageMs = 0) =>
      `${Date.now() - ageMs}.4242.${"ab".repeat(16)}${Math.random().toString(16).slice(2, 10)}`;
    const view = {
      type: "modal" as const,
      title: { type: "plain_text" as const, text: "Request arguments" },
      blocks: [
        {
          type: "rich_text",
          elements: [{ type: "rich_text_preformatted", elements: [{ type: "text", text: "<!channel>" }] }],
        },
      ],
    };
    const t = trigger();
    const r = await client.views.open({ trigger_id: t, view });
    expect(r.view).toMatchObject({ type: "modal", blocks: view.blocks, team_id: fake.teamId });
    expect(fake.openedViews.at(-1)).toMatchObject({ triggerId: t, view });
    expect(await slackError(client.views.open({ trigger_id: t, view }))).toMatchObject({
      error: "exchanged_trigger_id",
    });
    expect(await slackError(client.views.open({ trigger_id: trigger(10_000), view }))).toMatchObject({
      error: "expired_trigger_id",
    });
    expect(await slackError(client.views.open({ trigger_id: "nope", view }))).toMatchObject({
      error: "invalid_trigger_id",
    });
    const badTitle = { ...view, title: { type: "plain_text" as const, text: "A title longer than twenty-four" } };
    expect(await slackError(client.views.open({ trigger_id: trigger(), view: badTitle }))).toMatchObject({
      error: "invalid_arguments",
    });
    const tooMany = { ...view, blocks: Array.from({ length: 101 }, () => ({ type: "divider" })) };
    expect(await slackError(client.views.open({ trigger_id: trigger(), view: tooMany }))).toMatchObject({
      error: "invalid_arguments",
    });
    const longText = { ...view, blocks: [{ type: "section", text: { type: "mrkdwn", text: "x".repeat(3001) } }] };
    expect(await slackError(client.views.open({ trigger_id: trigger(), view: longText }))).toMatchObject({
      error: "invalid_arguments",
    });
  });

  it("apps.connections.open takes only the app token and returns a ws:// URL", async () => {
    const app = clientFor(fake, fake.appToken);
    const r = await app.apps.connections.open();
    expect(r.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/link\/\?ticket=/);
    expect(await slackError(client.apps.connections.open())).toMatchObject({ error: "not_allowed_token_type" });
    expect(await slackError(app.auth.test())).toMatchObject({ error: "not_allowed_token_type" });
  });

  it("unknown tokens and methods", async () => {
    expect(await slackError(clientFor(fake, "xoxb-wrong").auth.test())).toMatchObject({ error: "invalid_auth" });
    expect(
      await slackError(new WebClient(undefined, { slackApiUrl: fake.apiUrl, logLevel: LogLevel.ERROR }).auth.test()),
    ).toMatchObject({
      error: "not_authed",
    });
    expect(await slackError(client.apiCall("nope.method"))).toMatchObject({ error: "unknown_method" });
    expect(fake.callsOf("nope.method")).toHaveLength(1);
  });

  it("accepts JSON bodies with the token in the header", async () => {
    const res = await fetch(`${fake.apiUrl}chat.postMessage`, {
      method: "POST",
      headers: { "Content-Type": "application/json; charset=utf-8", Authorization: `Bearer ${fake.botToken}` },
      body: JSON.stringify({ channel: "C0JSON", text: "json", blocks: [{ type: "divider" }] }),
    });
    expect(await res.json()).toMatchObject({ ok: true, channel: "C0JSON" });
    expect(fake.callsOf("chat.postMessage").at(-1)?.args).toEqual({
      channel: "C0JSON",
      text: "json",
      blocks: [{ type: "divider" }],
    });
  });

  it("waitFor resolves with past and future calls, and times out with context", async () => {
    const past = await fake.waitFor("auth.test");
    expect(past.method).toBe("auth.test");
    const later = fake.waitFor("chat.postMessage", (c) => c.args.text === "later");
    setTimeout(() => void client.chat.postMessage({ channel: "C0W", text: "later" }), 20);
    expect((await later).args).toMatchObject({ channel: "C0W", text: "later" });
    await expect(fake.waitFor("chat.postMessage", (c) => c.args.text === "never", 50)).rejects.toThrow(
      /no matching chat.postMessage/,
    );
  });

  it("setFailing: Slack error, HTTP 500, dropped socket, hang; clearFailing restores", async () => {
    fake.setFailing("users.info", "ratelimited");
    expect(await slackError(client.users.info({ user: ADMIN }))).toMatchObject({
      code: ErrorCode.PlatformError,
      error: "ratelimited",
    });

    fake.setFailing("users.info");
    expect(await slackError(client.users.info({ user: ADMIN }))).toMatchObject({
      code: ErrorCode.HTTPError,
      statusCode: 500,
    });

    fake.setFailing("users.info", "drop");
    expect(await slackError(client.users.info({ user: ADMIN }))).toMatchObject({ code: ErrorCode.RequestError });

    fake.setFailing("*", "hang");
    const t0 = Date.now();
    expect(await slackError(clientFor(fake, fake.botToken, { timeout: 200 }).auth.test())).toMatchObject({
      code: ErrorCode.RequestError,
    });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(150);

    fake.clearFailing();
    expect((await client.users.info({ user: ADMIN })).user?.is_admin).toBe(true);
  });

  it("response_url posts are captured", async () => {
    const url = fake.responseUrl("cmd-1");
    const res = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ text: "done" }),
    });
    expect(res.status).toBe(200);
    expect(fake.responses.at(-1)).toEqual({ id: "cmd-1", body: { text: "done" } });
  });
});
