// The app in Socket Mode: connects to a fake Socket Mode WebSocket (via apps.connections.open on the
// fake Web API), receives a slash command envelope, acks it and answers through response_url.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, it, vi } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { type FakeSlack, startFakeSlack } from "../fixtures/slack/fake-slack-api.js";
import { messageEvent, slashCommand } from "../fixtures/slack/signed-request.js";
import { freePort } from "../support/ports.js";
import { fixtureRegistryDoc } from "./broker-harness.js";

let fake: FakeSlack | undefined;
let app: RunningApp | undefined;
let dir: string | undefined;

afterEach(async () => {
  await app?.close();
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it("runs in Socket Mode against a fake WebSocket server: commands are acked and answered, events become turns", async () => {
  fake = await startFakeSlack();
  const f = fake;
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-socket-"));
  const config = loadConfig({
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: dir,
    PORT: "0",
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    SLACK_MODE: "socket",
    SLACK_BOT_TOKEN: fake.botToken,
    SLACK_APP_TOKEN: fake.appToken,
    SLACK_API_URL: fake.apiUrl,
    PATH: process.env.PATH ?? "",
  });
  app = await startApp({ config, registry: parseRegistry(fixtureRegistryDoc(), "test") });
  const a = app;
  await fake.socketMode.waitForConnection(10_000);
  expect(fake.callsOf("apps.connections.open")[0]?.token).toBe(fake.appToken);

  const id = fake.socketMode.send({
    type: "slash_commands",
    accepts_response_payload: true,
    payload: slashCommand({
      teamId: fake.teamId,
      channelId: "C0SOCKET1",
      userId: "UALICE01",
      command: "/connect",
      text: "vendor",
      responseUrl: fake.responseUrl("sock"),
    }),
  });
  await fake.socketMode.waitForAck(id, 10_000);
  await vi.waitFor(
    () => expect(JSON.stringify(f.responses.find((r) => r.id === "sock")?.body)).toContain("Connect vendor"),
    { timeout: 5_000, interval: 25 },
  );

  const thread = { teamId: fake.teamId, channelId: "C0SOCKET1", threadTs: "1700000000.000500" };
  app.broker.serverForThread(thread);
  const ev = fake.socketMode.send({
    type: "events_api",
    payload: messageEvent({
      teamId: fake.teamId,
      channelId: thread.channelId,
      user: "UBOB0002",
      text: "hi",
      threadTs: thread.threadTs,
    }),
  });
  await fake.socketMode.waitForAck(ev, 10_000);
  await expect.poll(() => a.broker.turns.current(thread), { timeout: 5_000, interval: 25 }).toBe("UBOB0002");
});

it("serves the install flow on the broker's own server in Socket Mode (no second HTTP server), and refuses unknown teams there too", async () => {
  fake = await startFakeSlack({
    teams: [{ id: "T0SOCKINS", users: [{ id: "UINSTALL1", isAdmin: true }] }],
    oauth: { clientId: "1111.2222", clientSecret: "socket-client-secret" },
  });
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-socket-install-"));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const config = loadConfig({
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: dir,
    PORT: String(port),
    SLAUDE_PUBLIC_URL: base,
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    SLACK_MODE: "socket",
    SLACK_APP_TOKEN: fake.appToken,
    SLACK_CLIENT_ID: "1111.2222",
    SLACK_CLIENT_SECRET: "socket-client-secret",
    SLACK_STATE_SECRET: "socket-state-secret-0123456789",
    SLACK_API_URL: fake.apiUrl,
    SLACK_OAUTH_AUTHORIZE_URL: fake.authorizeUrl,
    PATH: process.env.PATH ?? "",
  });
  app = await startApp({ config, registry: parseRegistry(fixtureRegistryDoc(), "test") });
  const a = app;
  await fake.socketMode.waitForConnection(10_000);
  const start = await fetch(`${base}/slack/install`, { redirect: "manual" });
  expect(start.status).toBe(302);
  const cookie = (start.headers.get("set-cookie") ?? "").split(";")[0]!;
  const back = await fetch(`${start.headers.get("location")!}&fake_team=T0SOCKINS&fake_user=UINSTALL1`, {
    redirect: "manual",
  });
  const done = await fetch(back.headers.get("location")!, { headers: { cookie }, redirect: "manual" });
  expect(done.status).toBe(200);
  expect((await a.store.installations.list(10)).map((i) => i.teamId)).toEqual(["T0SOCKINS"]);
  // A command from a team that never installed is acked over the socket, and nothing is sent to Slack for it.
  fake.clearCalls();
  const id = fake.socketMode.send({
    type: "slash_commands",
    accepts_response_payload: true,
    payload: slashCommand({
      teamId: "T0NOTHERE",
      channelId: "C0SOCKET1",
      userId: "UALICE01",
      command: "/connect",
      text: "vendor",
      responseUrl: fake.responseUrl("nobody"),
    }),
  });
  await fake.socketMode.waitForAck(id, 10_000);
  await expect
    .poll(
      async () => (await a.store.audit.query({ event: "installation_refused" })).some((r) => r.teamId === "T0NOTHERE"),
      { timeout: 5_000 },
    )
    .toBe(true);
  expect(fake.responses.find((r) => r.id === "nobody")).toBeUndefined();
  expect(fake.calls.filter((c) => c.method !== "apps.connections.open")).toEqual([]);
});
