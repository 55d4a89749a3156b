// Smoke test: the tenant envelopes over Socket Mode reach a real multi-workspace Bolt App (an `authorize` function,
// no single token) with their tenant, and a reply goes out with that tenant's token.
import { App, LogLevel } from "@slack/bolt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeSlack, startFakeSlack } from "../../fixtures/slack/fake-slack-api.js";
import { sendTenantEvent, tenantMessageEvent, tokensRevokedEvent } from "../../fixtures/slack/signed-tenant-events.js";

const TEAM_B = "T0BBBBBB";
const BOB = "U0BOB0001";
const ORG = "E0ORG0001";

describe("tenant events over Socket Mode with a multi-workspace Bolt App", () => {
  let fake: FakeSlack;
  let app: App;
  const seen: Array<[string, string | undefined, string | undefined, boolean]> = [];

  beforeAll(async () => {
    fake = await startFakeSlack({
      teams: [
        { id: TEAM_B, users: [BOB], channels: { C0BBBBBB: [BOB] } },
        { id: "T0GRID001", enterpriseId: ORG },
      ],
      installs: [{ tenant: { teamId: TEAM_B } }, { tenant: { enterpriseId: ORG } }],
    });
    app = new App({
      appToken: fake.appToken,
      socketMode: true,
      logLevel: LogLevel.ERROR,
      clientOptions: { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } },
      installerOptions: { clientOptions: { slackApiUrl: fake.apiUrl } },
      authorize: async (q) => {
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
    const note = (kind: string, c: Record<string, unknown>): void => {
      seen.push([
        kind,
        c.teamId as string | undefined,
        c.enterpriseId as string | undefined,
        c.isEnterpriseInstall === true,
      ]);
    };
    app.message(async ({ say, context }) => {
      note("message", context);
      await say("echo");
    });
    app.event("tokens_revoked", async ({ context }) => note("tokens_revoked", context));
    app.event("app_uninstalled", async ({ context }) => note("app_uninstalled", context));
    await app.start();
  });
  afterAll(async () => {
    await app.stop();
    await fake.close();
  });

  it("a message from B is answered with B's token", async () => {
    const id = sendTenantEvent(
      fake.socketMode,
      tenantMessageEvent(fake.tenantIds({ teamId: TEAM_B }), { channelId: "C0BBBBBB", user: BOB, text: "hi" }),
    );
    await fake.socketMode.waitForAck(id);
    const reply = await fake.waitFor("chat.postMessage", (c) => c.args.channel === "C0BBBBBB");
    expect(reply).toMatchObject({
      token: fake.installation({ teamId: TEAM_B })!.botToken,
      tenant: { teamId: TEAM_B },
      response: { ok: true },
    });
  });

  it("tokens_revoked and an org-wide app_uninstalled reach their listeners with the tenant", async () => {
    const b = fake.tenantIds({ teamId: TEAM_B });
    await fake.socketMode.waitForAck(sendTenantEvent(fake.socketMode, tokensRevokedEvent(b, { bot: [b.botUserId!] })));
    await fake.socketMode.waitForAck(sendTenantEvent(fake.socketMode, fake.uninstall({ enterpriseId: ORG })));
    await expect.poll(() => seen.length).toBe(3);
    expect(seen.slice(1)).toEqual([
      ["tokens_revoked", TEAM_B, undefined, false],
      ["app_uninstalled", ORG, ORG, true],
    ]);
  });
});
