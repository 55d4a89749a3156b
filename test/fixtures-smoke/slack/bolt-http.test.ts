// Smoke test: a real Bolt App with HTTPReceiver takes signed requests from the helpers and calls the fake Web API.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { App, HTTPReceiver, HTTPReceiverDeferredRequestError, LogLevel } from "@slack/bolt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeSlack, startFakeSlack } from "../../fixtures/slack/fake-slack-api.js";
import {
  appHomeOpenedEvent,
  blockActionPayload,
  messageEvent,
  postSlackEvent,
  postSlackInteraction,
  postSlashCommand,
  slashCommand,
} from "../../fixtures/slack/signed-request.js";

const SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
const ALICE = "U0ALICE01";

describe("real Bolt HTTPReceiver mounted on our own http server", () => {
  let fake: FakeSlack;
  let app: App;
  let server: Server;
  let url: string;
  const seen: Array<{ kind: string; body: unknown }> = [];

  beforeAll(async () => {
    // The fake must be up before `new App`: with a token, Bolt calls auth.test from the constructor.
    fake = await startFakeSlack();
    const receiver = new HTTPReceiver({ signingSecret: SECRET, logLevel: LogLevel.ERROR });
    app = new App({
      token: fake.botToken,
      receiver,
      logLevel: LogLevel.ERROR,
      clientOptions: { slackApiUrl: fake.apiUrl },
    });

    app.command("/connect", async ({ ack, command, respond }) => {
      await ack({ response_type: "ephemeral", text: `ok ${command.text}` });
      seen.push({ kind: "command", body: command });
      await respond({ text: "later" });
    });
    app.action("approve", async ({ ack, body, client }) => {
      await ack();
      seen.push({ kind: "action", body });
      const b = body as { channel?: { id: string }; message?: { ts: string } };
      if (b.channel && b.message)
        await client.chat.update({ channel: b.channel.id, ts: b.message.ts, text: "approved", blocks: [] });
    });
    app.message(async ({ message, say }) => {
      seen.push({ kind: "message", body: message });
      await say({ text: "echo", thread_ts: (message as { ts: string }).ts });
    });
    app.event("app_home_opened", async ({ event, client }) => {
      await client.views.publish({ user_id: event.user, view: { type: "home", blocks: [{ type: "divider" }] } });
    });

    // requestListener serves POST /slack/events (the default `endpoints`) and throws
    // HTTPReceiverDeferredRequestError for anything else, so our own routes can take over.
    server = createServer((req, res) => {
      try {
        receiver.requestListener(req, res);
      } catch (err) {
        if (!(err instanceof HTTPReceiverDeferredRequestError)) throw err;
        res.writeHead(404, { "Content-Type": "text/plain" });
        res.end("ours: not found");
      }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await fake.close();
  });

  it("called auth.test at construction", async () => {
    await fake.waitFor("auth.test");
  });

  it("slash command: handler runs, ack body is the HTTP response, respond() reaches the fake", async () => {
    const responseUrl = fake.responseUrl("cmd");
    const fields = slashCommand({
      teamId: fake.teamId,
      channelId: "C0GENERAL",
      userId: ALICE,
      command: "/connect",
      text: "gitlab",
      responseUrl,
    });
    const res = await postSlashCommand(url, SECRET, fields);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ response_type: "ephemeral", text: "ok gitlab" });
    expect(seen.find((s) => s.kind === "command")?.body).toMatchObject({ user_id: ALICE, text: "gitlab" });
    await expect.poll(() => fake.responses.find((r) => r.id === "cmd")?.body).toEqual({ text: "later" });
  });

  it("block action: handler runs and updates the message through the fake", async () => {
    const posted = await app.client.chat.postMessage({ channel: "C0APPROVE", text: "approve?" });
    const payload = blockActionPayload({
      userId: ALICE,
      teamId: fake.teamId,
      actionId: "approve",
      value: "req-1",
      channelId: "C0APPROVE",
      messageTs: posted.ts as string,
    });
    const res = await postSlackInteraction(url, SECRET, payload);
    expect(res.status).toBe(200);
    await fake.waitFor("chat.update", (c) => c.args.ts === posted.ts);
    expect(fake.messageAt("C0APPROVE", posted.ts as string)?.text).toBe("approved");
    expect(seen.find((s) => s.kind === "action")?.body).toMatchObject({
      actions: [{ action_id: "approve", value: "req-1" }],
    });
  });

  it("Home-tab block action (view container) reaches the handler", async () => {
    const before = seen.length;
    const res = await postSlackInteraction(
      url,
      SECRET,
      blockActionPayload({ userId: ALICE, teamId: fake.teamId, actionId: "approve", value: "home" }),
    );
    expect(res.status).toBe(200);
    await expect.poll(() => seen.length).toBeGreaterThan(before);
  });

  it("message event: handler runs; the bot's own message is ignored by Bolt", async () => {
    const ts = "1700000999.000100";
    const res = await postSlackEvent(
      url,
      SECRET,
      messageEvent({ teamId: fake.teamId, channelId: "C0GENERAL", user: ALICE, text: "hello", ts }),
    );
    expect(res.status).toBe(200);
    await fake.waitFor("chat.postMessage", (c) => c.args.thread_ts === ts);

    const own = messageEvent({
      teamId: fake.teamId,
      channelId: "C0GENERAL",
      user: fake.botUserId,
      text: "mine",
      botId: fake.botId,
    });
    expect((await postSlackEvent(url, SECRET, own)).status).toBe(200);
    // A user's message sent after the bot's own: once its reply is out, the bot's message is settled.
    const after = "1700000999.000200";
    const next = messageEvent({ teamId: fake.teamId, channelId: "C0GENERAL", user: ALICE, text: "after", ts: after });
    expect((await postSlackEvent(url, SECRET, next)).status).toBe(200);
    await fake.waitFor("chat.postMessage", (c) => c.args.thread_ts === after);
    expect(seen.filter((s) => s.kind === "message").map((s) => (s.body as { text: string }).text)).toEqual([
      "hello",
      "after",
    ]);
  });

  it("app_home_opened: handler publishes the Home view", async () => {
    const res = await postSlackEvent(url, SECRET, appHomeOpenedEvent({ teamId: fake.teamId, userId: ALICE }));
    expect(res.status).toBe(200);
    await fake.waitFor("views.publish", (c) => c.args.user_id === ALICE);
    expect(fake.homeViews.get(ALICE)).toEqual({ type: "home", blocks: [{ type: "divider" }] });
  });

  it("rejects a bad signature and a timestamp older than 5 minutes with 401; handlers do not run", async () => {
    const before = seen.length;
    const fields = slashCommand({
      teamId: fake.teamId,
      channelId: "C0GENERAL",
      userId: ALICE,
      command: "/connect",
      text: "evil",
    });
    expect((await postSlashCommand(url, SECRET, fields, { badSignature: true })).status).toBe(401);
    const stale = Math.floor(Date.now() / 1000) - 5 * 60 - 10;
    expect((await postSlashCommand(url, SECRET, fields, { timestamp: stale })).status).toBe(401);
    expect(
      (
        await postSlackEvent(
          url,
          "another-secret",
          messageEvent({ teamId: fake.teamId, channelId: "C0G", user: ALICE, text: "x" }),
        )
      ).status,
    ).toBe(401);
    expect(seen.length).toBe(before);
  });

  it("answers url_verification and defers other paths to our server", async () => {
    const res = await postSlackEvent(url, SECRET, { token: "t", challenge: "abc123", type: "url_verification" });
    expect(res).toMatchObject({ status: 200 });
    expect(JSON.parse(res.body)).toEqual({ challenge: "abc123" });
    const other = await fetch(url.replace("/slack/events", "/elsewhere"), { method: "POST" });
    expect(other.status).toBe(404);
    expect(await other.text()).toBe("ours: not found");
  });
});

describe("real Bolt App started with app.start on 127.0.0.1", () => {
  let fake: FakeSlack;
  let app: App;
  let url: string;
  let ran = 0;

  beforeAll(async () => {
    fake = await startFakeSlack();
    app = new App({
      token: fake.botToken,
      signingSecret: SECRET,
      logLevel: LogLevel.ERROR,
      clientOptions: { slackApiUrl: fake.apiUrl },
    });
    app.command("/connect", async ({ ack }) => {
      ran += 1;
      await ack();
    });
    const server = await app.start({ port: 0, host: "127.0.0.1" });
    const addr = server.address() as AddressInfo;
    expect(addr.address).toBe("127.0.0.1");
    url = `http://127.0.0.1:${addr.port}/slack/events`;
  });

  afterAll(async () => {
    await app.stop();
    await fake.close();
  });

  it("runs the handler for a signed command and rejects an unsigned one", async () => {
    const fields = slashCommand({
      teamId: fake.teamId,
      channelId: "C0G",
      userId: ALICE,
      command: "/connect",
      text: "",
    });
    const ok = await postSlashCommand(url, SECRET, fields);
    expect(ok).toMatchObject({ status: 200, body: "" });
    expect(ran).toBe(1);
    expect((await postSlashCommand(url, SECRET, fields, { badSignature: true })).status).toBe(401);
    expect(ran).toBe(1);
  });
});
