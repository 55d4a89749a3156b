// Smoke test: a real Bolt App in Socket Mode connects to the fake's WebSocket and acks pushed envelopes.
import { App, LogLevel, SocketModeReceiver } from "@slack/bolt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeSlack, startFakeSlack } from "../../fixtures/slack/fake-slack-api.js";
import { blockActionPayload, messageEvent, slashCommand } from "../../fixtures/slack/signed-request.js";

const ALICE = "U0ALICE01";

describe("real Bolt App with socketMode: true", () => {
  let fake: FakeSlack;
  let app: App;
  const seen: string[] = [];

  beforeAll(async () => {
    fake = await startFakeSlack();
    app = new App({
      token: fake.botToken,
      appToken: fake.appToken,
      socketMode: true,
      logLevel: LogLevel.ERROR,
      // The bot client and the Socket Mode client (apps.connections.open) are separate WebClients.
      clientOptions: { slackApiUrl: fake.apiUrl },
      installerOptions: { clientOptions: { slackApiUrl: fake.apiUrl } },
    });
    app.command("/connect", async ({ ack, command }) => {
      seen.push(`command:${command.text}`);
      await ack({ response_type: "ephemeral", text: `ok ${command.text}` });
    });
    app.message(async ({ message }) => {
      seen.push(`message:${(message as { text: string }).text}`);
    });
    app.action("approve", async ({ ack, body }) => {
      await ack();
      seen.push(`action:${(body as { actions: Array<{ value: string }> }).actions[0]?.value}`);
    });
    // Resolves once the fake has sent "hello".
    await app.start();
  });

  afterAll(async () => {
    // Stop Bolt first: a client whose server vanishes reconnects, and a failing reconnect is an unhandled rejection.
    await app.stop();
    await fake.close();
  });

  it("connected with the app token through apps.connections.open", () => {
    expect(fake.callsOf("apps.connections.open")).toMatchObject([{ token: fake.appToken }]);
    expect(fake.socketMode.connectionCount).toBe(1);
  });

  it("slash_commands envelope reaches the handler and the ack carries its payload", async () => {
    const id = fake.socketMode.send({
      type: "slash_commands",
      payload: slashCommand({
        teamId: fake.teamId,
        channelId: "C0GENERAL",
        userId: ALICE,
        command: "/connect",
        text: "gitlab",
      }),
    });
    const ack = await fake.socketMode.waitForAck(id);
    expect(ack).toEqual({ envelope_id: id, payload: { response_type: "ephemeral", text: "ok gitlab" } });
    expect(seen).toContain("command:gitlab");
  });

  it("events_api envelope is acked (Bolt acks events itself) and the listener runs", async () => {
    const id = fake.socketMode.send({
      type: "events_api",
      payload: messageEvent({ teamId: fake.teamId, channelId: "C0GENERAL", user: ALICE, text: "hi there" }),
    });
    expect(await fake.socketMode.waitForAck(id)).toEqual({ envelope_id: id, payload: {} });
    await expect.poll(() => seen).toContain("message:hi there");
  });

  it("interactive envelope (block_actions) reaches the action handler", async () => {
    const payload = blockActionPayload({
      userId: ALICE,
      teamId: fake.teamId,
      actionId: "approve",
      value: "req-9",
      channelId: "C0A",
      messageTs: "1700000100.000001",
    });
    const id = fake.socketMode.send({ type: "interactive", payload });
    await fake.socketMode.waitForAck(id);
    expect(seen).toContain("action:req-9");
  });

  it("waitForAck times out for an envelope nobody acks", async () => {
    await expect(fake.socketMode.waitForAck("never-sent", 50)).rejects.toThrow(/no ack/);
  });
});

describe("Socket Mode reconnect (custom SocketModeReceiver for a short reconnect delay)", () => {
  let fake: FakeSlack;
  let app: App;
  let commands = 0;

  beforeAll(async () => {
    fake = await startFakeSlack();
    // The reconnect delay is clientPingTimeout × consecutive failures; App's socketMode option cannot set it.
    const receiver = new SocketModeReceiver({
      appToken: fake.appToken,
      logLevel: LogLevel.ERROR,
      clientPingTimeout: 1500,
      installerOptions: { clientOptions: { slackApiUrl: fake.apiUrl } },
    });
    app = new App({
      token: fake.botToken,
      receiver,
      logLevel: LogLevel.ERROR,
      clientOptions: { slackApiUrl: fake.apiUrl },
    });
    app.command("/connect", async ({ ack }) => {
      commands += 1;
      await ack();
    });
    await app.start();
  });

  afterAll(async () => {
    await app.stop();
    await fake.close();
  });

  it("a disconnect message makes the client fetch a new URL, reconnect, and keep acking", async () => {
    expect(fake.callsOf("apps.connections.open")).toHaveLength(1);
    fake.socketMode.requestReconnect();
    await fake.waitFor("apps.connections.open", () => fake.callsOf("apps.connections.open").length >= 2, 10_000);
    await expect.poll(() => fake.socketMode.connectionCount, { timeout: 10_000 }).toBe(1);
    const id = fake.socketMode.send({
      type: "slash_commands",
      payload: slashCommand({ teamId: fake.teamId, channelId: "C0G", userId: ALICE, command: "/connect", text: "" }),
    });
    expect(await fake.socketMode.waitForAck(id)).toEqual({ envelope_id: id, payload: {} });
    expect(commands).toBe(1);
  });
});
