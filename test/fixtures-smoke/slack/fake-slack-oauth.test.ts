// Smoke test: the real @slack/oauth InstallProvider runs Slack's install flow against the fake over HTTP (install
// path with its state cookie, the fake authorize page, the redirect, oauth.v2.access), for a workspace and an
// org-wide install; codes and refresh tokens are single use; a superseded token is flagged, then expires.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type Installation, InstallProvider, type Logger, LogLevel } from "@slack/oauth";
import { WebClient } from "@slack/web-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeSlack, startFakeSlack } from "../../fixtures/slack/fake-slack-api.js";

const CLIENT_ID = "1111.2222";
const CLIENT_SECRET = "fake-client-secret-0000";
const TEAM_B = "T0BBBBBB";
const BOB = "U0BOB0001";
const ORG = "E0ORG0001";
const GRID_1 = "T0GRID001";
const GRID_2 = "T0GRID002";
const ORG_ADMIN = "W0ADMIN01";

// InstallProvider logs a failed exchange at ERROR whatever the level; the replay test expects one.
const quiet: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  setLevel() {},
  getLevel: () => LogLevel.ERROR,
  setName() {},
};

async function slackError(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (err) {
    return (err as { data?: { error?: string } }).data?.error;
  }
  throw new Error("expected the call to fail");
}

describe("fake Slack OAuth with the real InstallProvider", () => {
  let fake: FakeSlack;
  let installer: InstallProvider;
  let server: Server;
  let appBase: string;
  let clock = Date.now();
  const installed: Installation[] = [];
  const failures: string[] = [];

  beforeAll(async () => {
    fake = await startFakeSlack({
      now: () => clock,
      teams: [
        { id: TEAM_B, name: "Team B", users: [{ id: BOB, isAdmin: true }], channels: { C0BBBBBB: [BOB] } },
        {
          id: GRID_1,
          enterpriseId: ORG,
          users: [{ id: ORG_ADMIN, isOwner: true }, "W0ANN0001"],
          channels: { C0GRID001: ["W0ANN0001"] },
        },
        { id: GRID_2, enterpriseId: ORG, users: ["W0ZED0001"], channels: { C0GRID002: ["W0ZED0001"] } },
      ],
      enterprises: [{ id: ORG, name: "Starship" }],
      oauth: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, tokenRotation: true, expiresInSeconds: 60 },
    });
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      if (path === "/slack/install") void installer.handleInstallPath(req, res);
      else if (path === "/slack/oauth_redirect") {
        void installer.handleCallback(req, res, {
          success: (i, _o, _q, r) => {
            installed.push(i);
            r.writeHead(200).end("installed");
          },
          failure: (e, _o, _q, r) => {
            failures.push(e.message);
            r.writeHead(400).end("failed");
          },
        });
      } else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    appBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    installer = new InstallProvider({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      stateSecret: "fake-state-secret",
      directInstall: true,
      authorizationUrl: fake.authorizeUrl,
      installUrlOptions: { scopes: ["chat:write", "users:read"], redirectUri: `${appBase}/slack/oauth_redirect` },
      clientOptions: { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } },
      logger: quiet,
    });
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await fake.close();
  });

  // Follows the flow as a browser does: the install path sets the state cookie and redirects to the authorize page,
  // which redirects back with code and state; the callback needs the cookie.
  async function installAs(
    params: Record<string, string>,
  ): Promise<{ callback: string; cookie: string; status: number }> {
    const start = await fetch(`${appBase}/slack/install`, { redirect: "manual" });
    expect(start.status).toBe(302);
    const cookie = (start.headers.get("set-cookie") ?? "").split(";")[0]!;
    const authorize = new URL(start.headers.get("location")!);
    expect(authorize.origin + authorize.pathname).toBe(fake.authorizeUrl);
    for (const [k, v] of Object.entries(params)) authorize.searchParams.set(k, v);
    const page = await fetch(authorize, { redirect: "manual" });
    expect(page.status).toBe(302);
    const callback = page.headers.get("location")!;
    const done = await fetch(callback, { headers: { cookie }, redirect: "manual" });
    return { callback, cookie, status: done.status };
  }

  it("a workspace install: code → bot token bound to team B, which sees B and nothing else", async () => {
    const r = await installAs({ fake_team: TEAM_B });
    expect(r.status).toBe(200);
    const i = installed.at(-1)!;
    expect(i).toMatchObject({
      team: { id: TEAM_B, name: "Team B" },
      isEnterpriseInstall: false,
      appId: fake.appId,
      user: { id: BOB },
    });
    expect(i.bot?.token).toMatch(/^xoxe\.xoxb-/);
    expect(i.bot?.refreshToken).toMatch(/^xoxe-1-/);
    expect(i.bot?.scopes).toEqual(["chat:write", "users:read"]);
    expect(fake.oauth.visits.at(-1)?.query).toMatchObject({
      client_id: CLIENT_ID,
      scope: "chat:write,users:read",
      redirect_uri: `${appBase}/slack/oauth_redirect`,
    });
    expect(fake.oauth.exchanges.at(-1)).toMatchObject({
      grantType: "authorization_code",
      clientAuth: "form",
      installation: `T:${TEAM_B}`,
    });

    const b = new WebClient(i.bot!.token, { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } });
    expect(await b.auth.test()).toMatchObject({
      team_id: TEAM_B,
      user_id: i.bot!.userId,
      bot_id: i.bot!.id,
      is_enterprise_install: false,
    });
    await b.chat.postMessage({ channel: "C0BBBBBB", text: "hi B" });
    expect(await slackError(b.chat.postMessage({ channel: "C0GRID001", text: "x" }))).toBe("channel_not_found");
    expect(await slackError(b.users.info({ user: ORG_ADMIN }))).toBe("user_not_found");
    expect(fake.callsWithToken(i.bot!.token).every((c) => c.tenant?.teamId === TEAM_B)).toBe(true);
  });

  it("a code works once: replaying the callback with its cookie exchanges nothing", async () => {
    const r = await installAs({ fake_team: TEAM_B });
    expect(r.status).toBe(200);
    const before = installed.length;
    const replay = await fetch(r.callback, { headers: { cookie: r.cookie }, redirect: "manual" });
    expect(replay.status).toBe(400);
    expect(installed.length).toBe(before);
    expect(fake.oauth.exchanges.at(-1)).toMatchObject({ grantType: "authorization_code", error: "invalid_code" });
  });

  it("an org-wide install: one token serves both teams of the org, through team_id, and no other team", async () => {
    expect((await installAs({ fake_enterprise: ORG })).status).toBe(200);
    const i = installed.at(-1)!;
    expect(i).toMatchObject({
      team: undefined,
      enterprise: { id: ORG, name: "Starship" },
      isEnterpriseInstall: true,
      user: { id: ORG_ADMIN },
    });
    expect(i.enterpriseUrl).toBe("https://e0org0001.enterprise.slack.com/");
    const org = (team?: string): WebClient =>
      new WebClient(i.bot!.token, {
        slackApiUrl: fake.apiUrl,
        retryConfig: { retries: 0 },
        ...(team ? { teamId: team } : {}),
      });
    expect(await org().auth.test()).toMatchObject({ team_id: ORG, enterprise_id: ORG, is_enterprise_install: true });
    await org(GRID_1).chat.postMessage({ channel: "C0GRID001", text: "one" });
    await org(GRID_2).chat.postMessage({ channel: "C0GRID002", text: "two" });
    expect((await org().users.info({ user: "W0ZED0001" })).user).toMatchObject({
      team_id: GRID_2,
      enterprise_user: { enterprise_id: ORG },
    });
    expect(await slackError(org(GRID_1).chat.postMessage({ channel: "C0GRID002", text: "x" }))).toBe(
      "channel_not_found",
    );
    expect(await slackError(org().chat.postMessage({ channel: "C0BBBBBB", text: "x" }))).toBe("channel_not_found");
    expect(await slackError(org(TEAM_B).auth.test())).toBe("team_access_not_granted");
    expect(fake.messages.filter((m) => m.text === "one" || m.text === "two").map((m) => m.teamId)).toEqual([
      GRID_1,
      GRID_2,
    ]);
  });

  it("refresh tokens are single use; the superseded access token is flagged, then expires", async () => {
    // The latest install of B (the replay test reinstalled it, which used up the first refresh token).
    const i = installed.filter((x) => x.team?.id === TEAM_B).at(-1)!;
    const oldToken = i.bot!.token;
    const oldRefresh = i.bot!.refreshToken!;
    // expires_in 60 s is inside InstallProvider's 2-hour window, so authorize() refreshes now.
    const auth = await installer.authorize({ teamId: TEAM_B, isEnterpriseInstall: false, enterpriseId: undefined });
    expect(auth.botToken).toMatch(/^xoxe\.xoxb-/);
    expect(auth.botToken).not.toBe(oldToken);
    expect(auth.botRefreshToken).not.toBe(oldRefresh);
    expect(fake.oauth.refreshCount(oldRefresh)).toBe(1);
    expect(fake.installation({ teamId: TEAM_B })).toMatchObject({
      botToken: auth.botToken,
      refreshToken: auth.botRefreshToken,
    });

    const noToken = new WebClient(undefined, { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } });
    const again = noToken.oauth.v2.access({
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
      grant_type: "refresh_token",
      refresh_token: oldRefresh,
    });
    expect(await slackError(again)).toBe("invalid_refresh_token");
    expect(fake.oauth.refreshCount(oldRefresh)).toBe(2);

    const stale = new WebClient(oldToken, { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } });
    expect(fake.supersededUses()).toEqual([]);
    await stale.auth.test();
    expect(fake.supersededUses().map((c) => c.token)).toEqual([oldToken]);
    clock += 61_000;
    expect(await slackError(stale.auth.test())).toBe("token_expired");
    expect(
      await slackError(
        new WebClient(auth.botToken, { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } }).auth.test(),
      ),
    ).toBe("token_expired");
  });

  it("client authentication, redirect_uri binding and the authorize page's refusals", async () => {
    const noToken = new WebClient(undefined, { slackApiUrl: fake.apiUrl, retryConfig: { retries: 0 } });
    expect(await slackError(noToken.oauth.v2.access({ client_id: CLIENT_ID, client_secret: "wrong", code: "x" }))).toBe(
      "bad_client_secret",
    );
    expect(
      await slackError(noToken.oauth.v2.access({ client_id: "9.9", client_secret: CLIENT_SECRET, code: "x" })),
    ).toBe("invalid_client_id");

    const q = new URLSearchParams({
      client_id: CLIENT_ID,
      scope: "chat:write",
      redirect_uri: "http://127.0.0.1:9/cb",
      state: "s1",
      fake_team: TEAM_B,
    });
    const page = await fetch(`${fake.authorizeUrl}?${q}`, { redirect: "manual" });
    const code = new URL(page.headers.get("location")!).searchParams.get("code")!;
    // HTTP Basic client authentication, as Slack also accepts; a different redirect_uri is refused (and uses the code).
    const basic = `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString("base64")}`;
    const post = (body: Record<string, string>) =>
      fetch(`${fake.apiUrl}oauth.v2.access`, {
        method: "POST",
        headers: { authorization: basic, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(body),
      }).then((r) => r.json());
    expect(await post({ code, redirect_uri: "http://127.0.0.1:9/other" })).toEqual({
      ok: false,
      error: "bad_redirect_uri",
    });
    expect(await post({ code, redirect_uri: "http://127.0.0.1:9/cb" })).toEqual({ ok: false, error: "invalid_code" });

    const deny = await fetch(
      `${fake.authorizeUrl}?${new URLSearchParams({ client_id: CLIENT_ID, scope: "chat:write", redirect_uri: "http://127.0.0.1:9/cb", state: "s2", fake_deny: "1" })}`,
      { redirect: "manual" },
    );
    expect(new URL(deny.headers.get("location")!).searchParams.toString()).toBe("error=access_denied&state=s2");
    const notAdmin = await fetch(
      `${fake.authorizeUrl}?${new URLSearchParams({ client_id: CLIENT_ID, scope: "chat:write", redirect_uri: "http://127.0.0.1:9/cb", fake_enterprise: ORG, fake_user: "W0ANN0001" })}`,
      { redirect: "manual" },
    );
    expect(notAdmin.status).toBe(400);
    const badClient = await fetch(
      `${fake.authorizeUrl}?${new URLSearchParams({ client_id: "nope", scope: "chat:write", redirect_uri: "http://127.0.0.1:9/cb" })}`,
      { redirect: "manual" },
    );
    expect(badClient.status).toBe(400);
    expect(fake.oauth.visits.slice(-2).map((v) => v.error)).toEqual(["not_an_org_admin", "invalid_client_id"]);

    // Without a test choice Slack's `team` param picks the workspace (or the org); a fixture setting beats it.
    const authorize = (extra: Record<string, string>) =>
      fetch(
        `${fake.authorizeUrl}?${new URLSearchParams({ client_id: CLIENT_ID, scope: "chat:write", redirect_uri: "http://127.0.0.1:9/cb", ...extra })}`,
        { redirect: "manual" },
      );
    const exchange = async (extra: Record<string, string>) => {
      const code = new URL((await authorize(extra)).headers.get("location")!).searchParams.get("code")!;
      return noToken.oauth.v2.access({
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        code,
        redirect_uri: "http://127.0.0.1:9/cb",
      });
    };
    expect(await exchange({ team: GRID_2 })).toMatchObject({
      team: { id: GRID_2 },
      enterprise: { id: ORG },
      is_enterprise_install: false,
    });
    expect(await exchange({ team: ORG })).toMatchObject({
      team: null,
      is_enterprise_install: true,
      authed_user: { id: ORG_ADMIN },
    });
    fake.oauth.setInstaller({ teamId: TEAM_B, userId: BOB });
    expect(await exchange({ team: GRID_2 })).toMatchObject({ team: { id: TEAM_B }, authed_user: { id: BOB } });
    fake.oauth.setInstaller(undefined);
  });
});
