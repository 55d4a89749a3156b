// Smoke test: tenant envelopes (a second workspace, a Grid workspace under an org-wide install, app_uninstalled,
// tokens_revoked) pass Bolt's own signature verification and reach a real multi-workspace Bolt App (an `authorize`
// function instead of one token) with the tenant Bolt reads from them; replies go out with that tenant's token.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { App, HTTPReceiver, type InstallationQuery, type Logger, LogLevel, verifySlackRequest } from "@slack/bolt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeSlack, startFakeSlack } from "../../fixtures/slack/fake-slack-api.js";
import { slackSignature } from "../../fixtures/slack/signed-request.js";
import {
  appUninstalledEvent,
  postAppUninstalled,
  postTenantCommand,
  postTenantEvent,
  postTenantInteraction,
  postTokensRevoked,
  tenantBlockActionPayload,
  tenantMessageEvent,
  tenantSlashCommand,
} from "../../fixtures/slack/signed-tenant-events.js";

const SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
const TEAM_B = "T0BBBBBB";
const BOB = "U0BOB0001";
const ORG = "E0ORG0001";
const GRID_2 = "T0GRID002";
const ZED = "W0ZED0001";

// Bolt logs the refused authorize at ERROR whatever the level; the last test expects one.
const quiet: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  setLevel() {},
  getLevel: () => LogLevel.ERROR,
  setName() {},
};

interface Seen {
  kind: string;
  teamId: string | undefined;
  enterpriseId: string | undefined;
  isEnterpriseInstall: boolean;
  body?: unknown;
}

describe("signed tenant events with Bolt's verifier and a multi-workspace Bolt App", () => {
  let fake: FakeSlack;
  let server: Server;
  let url: string;
  const queries: InstallationQuery<boolean>[] = [];
  const seen: Seen[] = [];

  beforeAll(async () => {
    fake = await startFakeSlack({
      teams: [
        { id: TEAM_B, users: [BOB], channels: { C0BBBBBB: [BOB] } },
        { id: "T0GRID001", enterpriseId: ORG },
        { id: GRID_2, enterpriseId: ORG, users: [ZED], channels: { C0GRID002: [ZED] } },
      ],
      installs: [{ tenant: { teamId: TEAM_B } }, { tenant: { enterpriseId: ORG } }],
    });
    const receiver = new HTTPReceiver({ signingSecret: SECRET, logLevel: LogLevel.ERROR });
    const app = new App({
      receiver,
      logger: quiet,
      clientOptions: { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } },
      // Enterprise first for an org-wide install, then the team's own: the lookup the product will do.
      authorize: async (q) => {
        queries.push(q);
        const inst =
          q.isEnterpriseInstall && q.enterpriseId
            ? fake.installation({ enterpriseId: q.enterpriseId })
            : q.teamId
              ? fake.installation({ teamId: q.teamId })
              : undefined;
        if (!inst?.installed) throw new Error("no installation");
        return { botToken: inst.botToken, botUserId: inst.botUserId, botId: inst.botId };
      },
    });
    const note = (kind: string, context: Record<string, unknown>, body?: unknown): void => {
      seen.push({
        kind,
        teamId: context.teamId as string | undefined,
        enterpriseId: context.enterpriseId as string | undefined,
        isEnterpriseInstall: context.isEnterpriseInstall === true,
        body,
      });
    };
    app.message(async ({ message, say, context }) => {
      note("message", context);
      await say({ text: "echo", thread_ts: (message as { ts: string }).ts });
    });
    app.event("app_uninstalled", async ({ context }) => note("app_uninstalled", context));
    app.event("tokens_revoked", async ({ event, context }) => note("tokens_revoked", context, event.tokens));
    app.action("approve", async ({ ack, context }) => {
      await ack();
      note("action", context);
    });
    app.command("/connect", async ({ ack, context }) => {
      await ack();
      note("command", context);
    });
    server = createServer((req, res) => receiver.requestListener(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await fake.close();
  });

  it("the envelopes' signatures verify with Bolt's verifier, and a wrong secret does not", () => {
    const body = JSON.stringify(appUninstalledEvent(fake.tenantIds({ teamId: TEAM_B })));
    const ts = Math.floor(Date.now() / 1000);
    const headers = { "x-slack-signature": slackSignature(SECRET, ts, body), "x-slack-request-timestamp": ts };
    expect(() => verifySlackRequest({ signingSecret: SECRET, body, headers })).not.toThrow();
    expect(() => verifySlackRequest({ signingSecret: `${SECRET}x`, body, headers })).toThrow(/signature/i);
  });

  it("a message from team B is authorized as B and answered with B's token; a Grid workspace's as the org install", async () => {
    const b = fake.tenantIds({ teamId: TEAM_B });
    expect(
      (await postTenantEvent(url, SECRET, tenantMessageEvent(b, { channelId: "C0BBBBBB", user: BOB, text: "hi" })))
        .status,
    ).toBe(200);
    const reply = await fake.waitFor("chat.postMessage", (c) => c.args.channel === "C0BBBBBB");
    expect(reply).toMatchObject({
      token: fake.installation({ teamId: TEAM_B })!.botToken,
      tenant: { teamId: TEAM_B },
      response: { ok: true },
    });
    expect(queries.at(-1)).toMatchObject({ teamId: TEAM_B, isEnterpriseInstall: false });

    const g = fake.tenantIds({ enterpriseId: ORG }, GRID_2);
    expect(
      (await postTenantEvent(url, SECRET, tenantMessageEvent(g, { channelId: "C0GRID002", user: ZED, text: "hi" })))
        .status,
    ).toBe(200);
    const orgReply = await fake.waitFor("chat.postMessage", (c) => c.args.channel === "C0GRID002");
    // Bolt adds the workspace as team_id, which is how the org-wide token knows where it acts.
    expect(orgReply).toMatchObject({ args: { team_id: GRID_2 }, tenant: { key: `E:${ORG}` }, response: { ok: true } });
    expect(queries.at(-1)).toMatchObject({ teamId: GRID_2, enterpriseId: ORG, isEnterpriseInstall: true });
    expect(seen.filter((s) => s.kind === "message").map((s) => [s.teamId, s.enterpriseId])).toEqual([
      [TEAM_B, undefined],
      [GRID_2, ORG],
    ]);
  });

  it("block actions and slash commands carry the tenant Bolt authorizes", async () => {
    const g = fake.tenantIds({ enterpriseId: ORG }, GRID_2);
    const action = tenantBlockActionPayload(g, { userId: ZED, actionId: "approve", value: "1" });
    expect((await postTenantInteraction(url, SECRET, action)).status).toBe(200);
    expect(queries.at(-1)).toMatchObject({ teamId: GRID_2, enterpriseId: ORG, isEnterpriseInstall: true, userId: ZED });
    const cmd = tenantSlashCommand(fake.tenantIds({ teamId: TEAM_B }), {
      channelId: "C0BBBBBB",
      userId: BOB,
      command: "/connect",
      text: "",
    });
    expect((await postTenantCommand(url, SECRET, cmd)).status).toBe(200);
    expect(queries.at(-1)).toMatchObject({ teamId: TEAM_B, isEnterpriseInstall: false, userId: BOB });
    expect(seen.filter((s) => s.kind === "action" || s.kind === "command").map((s) => s.kind)).toEqual([
      "action",
      "command",
    ]);
  });

  it("tokens_revoked and app_uninstalled reach their listeners with the tenant; a bad signature is refused", async () => {
    const b = fake.tenantIds({ teamId: TEAM_B });
    const bad = await postAppUninstalled(url, SECRET, b, { badSignature: true });
    expect(bad.status).toBe(401);
    expect((await postTokensRevoked(url, SECRET, b)).status).toBe(200);
    expect((await postTenantEvent(url, SECRET, fake.uninstall({ enterpriseId: ORG }))).status).toBe(200);
    expect((await postAppUninstalled(url, SECRET, b)).status).toBe(200);
    const events = seen.filter((s) => s.kind === "tokens_revoked" || s.kind === "app_uninstalled");
    expect(events).toEqual([
      {
        kind: "tokens_revoked",
        teamId: TEAM_B,
        enterpriseId: undefined,
        isEnterpriseInstall: false,
        body: { bot: [b.botUserId] },
      },
      { kind: "app_uninstalled", teamId: ORG, enterpriseId: ORG, isEnterpriseInstall: true, body: undefined },
      { kind: "app_uninstalled", teamId: TEAM_B, enterpriseId: undefined, isEnterpriseInstall: false, body: undefined },
    ]);
    // After the org uninstall a Grid workspace's event finds no installation: Bolt's HTTPReceiver answers 401
    // (its default for a failed authorize) and calls nobody.
    fake.clearCalls();
    const g = fake.tenantIds({ teamId: GRID_2 });
    expect(
      (
        await postTenantEvent(
          url,
          SECRET,
          tenantMessageEvent(
            { ...g, enterpriseId: ORG, isEnterpriseInstall: true },
            { channelId: "C0GRID002", user: ZED, text: "late" },
          ),
        )
      ).status,
    ).toBe(401);
    expect(fake.callsForTeam(GRID_2)).toEqual([]);
  });
});
