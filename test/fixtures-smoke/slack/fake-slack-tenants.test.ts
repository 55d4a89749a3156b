// Smoke test: the fake serves several tenants to the real WebClient, each token seeing only its installation's
// teams, and records per call which installation's token it carried and which teams' ids it named.
import { WebClient } from "@slack/web-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeSlack, startFakeSlack } from "../../fixtures/slack/fake-slack-api.js";

const TEAM_B = "T0BBBBBB";
const TEAM_C = "T0CCCCCC"; // in the directory, never installed
const ORG = "E0ORG0001";
const GRID_1 = "T0GRID001";
const GRID_2 = "T0GRID002";
const ALICE = "U0ALICE01"; // team A (the default, open team)
const BOB = "U0BOB0001";
const BEA = "U0BEA0001";
const CAROL = "U0CAROL01";

async function slackError(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (err) {
    return (err as { data?: { error?: string } }).data?.error;
  }
  throw new Error("expected the call to fail");
}

describe("fake Slack with several tenants and the real WebClient", () => {
  let fake: FakeSlack;
  let a: WebClient;
  let b: WebClient;
  let bToken: string;
  const client = (token: string, teamId?: string): WebClient =>
    new WebClient(token, { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 }, ...(teamId ? { teamId } : {}) });

  beforeAll(async () => {
    fake = await startFakeSlack({
      admins: [ALICE],
      teams: [
        { id: TEAM_B, name: "Team B", users: [{ id: BOB, isOwner: true }, BEA], channels: { C0BBBBBB: [BOB, BEA] } },
        { id: TEAM_C, users: [CAROL], channels: { C0CCCCCC: [CAROL] } },
        { id: GRID_1, enterpriseId: ORG, users: ["W0ANN0001"], channels: { C0GRID001: ["W0ANN0001"] } },
        { id: GRID_2, enterpriseId: ORG, users: ["W0ZED0001"], channels: { C0GRID002: ["W0ZED0001"] } },
      ],
      installs: [
        { tenant: { teamId: TEAM_B }, scopes: ["chat:write", "users:read"] },
        { tenant: { enterpriseId: ORG } },
      ],
    });
    bToken = fake.installation({ teamId: TEAM_B })!.botToken;
    a = client(fake.botToken);
    b = client(bToken);
  });
  afterAll(async () => {
    await fake.close();
  });

  it("auth.test names each token's own team, bot user and bot; an org token answers for the org", async () => {
    const bi = fake.installation({ teamId: TEAM_B })!;
    expect(await a.auth.test()).toMatchObject({
      team_id: fake.teamId,
      user_id: fake.botUserId,
      bot_id: fake.botId,
      is_enterprise_install: false,
    });
    const r = await b.auth.test();
    expect(r).toMatchObject({
      url: "https://t0bbbbbb.slack.com/",
      team: "Team B",
      team_id: TEAM_B,
      user_id: bi.botUserId,
      bot_id: bi.botId,
      is_enterprise_install: false,
    });
    expect(r.enterprise_id).toBeUndefined();
    expect(bi.botUserId).not.toBe(fake.botUserId);
    const org = fake.installation({ enterpriseId: ORG })!;
    expect(await client(org.botToken).auth.test()).toMatchObject({
      team_id: ORG,
      enterprise_id: ORG,
      is_enterprise_install: true,
      user_id: org.botUserId,
    });
  });

  it("another team's users and channels do not exist for a token; its own do", async () => {
    expect(await slackError(a.users.info({ user: BOB }))).toBe("user_not_found");
    expect(await slackError(a.chat.postMessage({ channel: "C0BBBBBB", text: "x" }))).toBe("channel_not_found");
    expect(await slackError(a.conversations.members({ channel: "C0BBBBBB" }))).toBe("channel_not_found");
    expect(await slackError(a.conversations.open({ users: BOB }))).toBe("user_not_found");
    expect(await slackError(b.users.info({ user: ALICE }))).toBe("user_not_found");
    // B is strict: an id nobody declares does not exist there either, while the open default team takes it.
    expect(await slackError(b.users.info({ user: "U0NOBODY1" }))).toBe("user_not_found");
    expect(await slackError(b.chat.postMessage({ channel: "C0RANDOM", text: "x" }))).toBe("channel_not_found");
    expect((await a.users.info({ user: "U0NOBODY1" })).user?.team_id).toBe(fake.teamId);

    expect((await b.users.info({ user: BOB })).user).toMatchObject({ team_id: TEAM_B, is_owner: true, is_admin: true });
    expect((await b.users.info({ user: BEA })).user).toMatchObject({ is_admin: false, is_owner: false });
    expect((await a.users.info({ user: ALICE })).user).toMatchObject({ is_admin: true });
    expect((await b.conversations.members({ channel: "C0BBBBBB" })).members).toEqual([BOB, BEA]);
    expect((await b.conversations.info({ channel: "C0BBBBBB" })).channel).toMatchObject({
      id: "C0BBBBBB",
      context_team_id: TEAM_B,
    });
    expect((await b.team.info()).team).toMatchObject({ id: TEAM_B, name: "Team B", domain: "t0bbbbbb" });
    expect(await slackError(b.team.info({ team: fake.teamId }))).toBe("team_not_found");
  });

  it("chat.* and views.publish act per team: B cannot touch A's message, DMs belong to the user's team", async () => {
    const m = await a.chat.postMessage({ channel: "C0AAAAAA", text: "A's" });
    expect(await slackError(b.chat.update({ channel: "C0AAAAAA", ts: m.ts!, text: "x" }))).toBe("channel_not_found");
    expect(await slackError(b.chat.delete({ channel: "C0AAAAAA", ts: m.ts! }))).toBe("channel_not_found");
    const dm = await b.chat.postMessage({ channel: BOB, text: "hi Bob" });
    expect(dm.channel).toBe(`D${BOB}`);
    expect(fake.messageAt(`D${BOB}`, dm.ts!)?.teamId).toBe(TEAM_B);
    await b.chat.postEphemeral({ channel: "C0BBBBBB", user: BEA, text: "psst" });
    expect(await slackError(b.chat.postEphemeral({ channel: "C0BBBBBB", user: ALICE, text: "x" }))).toBe(
      "user_not_found",
    );
    expect(fake.ephemerals.at(-1)).toMatchObject({ teamId: TEAM_B, user: BEA });
    const view = { type: "home" as const, blocks: [{ type: "divider" as const }] };
    expect((await b.views.publish({ user_id: BOB, view })).view).toMatchObject({
      team_id: TEAM_B,
      bot_id: fake.installation({ teamId: TEAM_B })!.botId,
    });
    expect(await slackError(b.views.publish({ user_id: ALICE, view }))).toBe("user_not_found");
    expect(fake.homeViewsByTeam.get(TEAM_B)?.get(BOB)).toEqual(view);
    expect(fake.homeViewsByTeam.get(fake.teamId)?.has(BOB)).toBeFalsy();
  });

  it("every call records its token's installation and the teams it named", async () => {
    fake.clearCalls();
    await b.chat.postMessage({ channel: "C0BBBBBB", text: "ok" });
    await slackError(a.users.info({ user: BOB }));
    expect(fake.calls.map((c) => [c.method, c.tenant?.teamId, c.tokenState, c.namedTeams])).toEqual([
      ["chat.postMessage", TEAM_B, "active", [TEAM_B]],
      ["users.info", fake.teamId, "active", [TEAM_B]],
    ]);
    // "Every call about B carried B's token" fails on the second call, as a tenant test would want it to.
    expect(fake.callsForTeam(TEAM_B).map((c) => c.tenant?.teamId)).toEqual([TEAM_B, fake.teamId]);
    expect(fake.callsForTeam(TEAM_C)).toEqual([]);
    await slackError(a.conversations.members({ channel: "C0CCCCCC" }));
    expect(fake.callsForTeam(TEAM_C).map((c) => c.method)).toEqual(["conversations.members"]);
    // Bolt adds the event's team as team_id; a made-up team's id is recorded even though no such team exists.
    await client(fake.botToken, "T0MADEUP1").auth.test();
    expect(fake.callsForTeam("T0MADEUP1").map((c) => [c.method, c.tenant?.teamId])).toEqual([
      ["auth.test", fake.teamId],
    ]);
    expect(fake.tenantIds({ teamId: "T0MADEUP1" })).toMatchObject({
      teamId: "T0MADEUP1",
      enterpriseId: null,
      botUserId: "U0NOTINSTALLED",
    });
  });

  it("an org token acts in the workspace team_id names, and nowhere outside the org", async () => {
    const token = fake.installation({ enterpriseId: ORG })!.botToken;
    expect((await client(token, GRID_1).conversations.members({ channel: "C0GRID001" })).members).toEqual([
      "W0ANN0001",
    ]);
    expect((await client(token, GRID_2).users.info({ user: "W0ZED0001" })).user?.team_id).toBe(GRID_2);
    expect(await slackError(client(token, GRID_1).users.info({ user: "W0ZED0001" }))).toBe("user_not_found");
    expect(await slackError(client(token).users.info({ user: BOB }))).toBe("user_not_found");
    expect(await slackError(client(token, TEAM_B).users.info({ user: BOB }))).toBe("team_access_not_granted");
    expect(fake.calls.at(-1)).toMatchObject({
      tenant: { key: `E:${ORG}`, teamId: null, enterpriseId: ORG, isEnterpriseInstall: true },
    });
  });

  it("unknown, revoked and expired tokens; the installation's own scopes header", async () => {
    expect(await slackError(client("xoxb-0-not-a-token").auth.test())).toBe("invalid_auth");
    const res = await fetch(`${fake.apiUrl}auth.test`, {
      method: "POST",
      headers: { authorization: `Bearer ${bToken}` },
    });
    expect(res.headers.get("x-oauth-scopes")).toBe("chat:write,users:read");

    const envelope = fake.revokeTokens({ teamId: TEAM_B });
    expect(envelope).toMatchObject({
      team_id: TEAM_B,
      event: { type: "tokens_revoked", tokens: { bot: [fake.installation({ teamId: TEAM_B })!.botUserId] } },
    });
    expect(await slackError(b.auth.test())).toBe("token_revoked");
    expect(fake.calls.at(-1)).toMatchObject({ tokenState: "revoked", tenant: { teamId: TEAM_B } });

    const c = fake.install({ tenant: { teamId: TEAM_C }, rotation: true });
    expect(c.botToken).toMatch(/^xoxe\.xoxb-/);
    expect(c.refreshToken).toMatch(/^xoxe-1-/);
    fake.expireToken(c.botToken);
    expect(await slackError(client(c.botToken).auth.test())).toBe("token_expired");

    const gone = fake.uninstall({ enterpriseId: ORG });
    expect(gone).toMatchObject({
      team_id: ORG,
      enterprise_id: ORG,
      event: { type: "app_uninstalled" },
      authorizations: [{ team_id: null, is_enterprise_install: true }],
    });
    expect(await slackError(client(fake.installation({ enterpriseId: ORG })!.botToken, GRID_1).auth.test())).toBe(
      "token_revoked",
    );
    expect(fake.installation({ enterpriseId: ORG })?.installed).toBe(false);
    // A's single default token is untouched by all of it.
    expect((await a.auth.test()).ok).toBe(true);
  });
});
