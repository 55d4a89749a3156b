// Two workspaces and an Enterprise Grid org install the app through the real install flow (the
// broker's /slack/install and /slack/oauth_redirect, Bolt's InstallProvider, the state cookie and a
// database state) against the fake Slack, then the tenant boundary is attacked from outside: every
// Slack call must carry the token of the team it is for, an unknown team's event makes no call,
// admins and memberships never cross teams, and an uninstall wipes exactly its tenant.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import type { ThreadRef } from "../../src/domain/thread.js";
import { type FakeSlack, startFakeSlack } from "../fixtures/slack/fake-slack-api.js";
import {
  postTenantEvent,
  postTenantInteraction,
  tenantBlockActionPayload,
  tenantEventCallback,
  tenantMessageEvent,
} from "../fixtures/slack/signed-tenant-events.js";
import { freePort } from "../support/ports.js";
import { fixtureRegistryDoc, mcpCall } from "./broker-harness.js";

const CLIENT_ID = "1111.2222";
const CLIENT_SECRET = `client-secret-${randomBytes(6).toString("hex")}`;
const SIGNING = `signing-secret-${randomBytes(8).toString("hex")}`;
const TEAM_A = "T0AAAAAA1";
const TEAM_B = "T0BBBBBB1";
const NEVER = "T0NEVER01";
const ORG = "E0ORG0001";
const GRID_1 = "T0GRID001";
const GRID_2 = "T0GRID002";
const ALICE = "UALICE001";
const ADMIN_A = "UADMINA01";
const CAROL = "UCAROL001";
const ADMIN_B = "UADMINB01";
const ORG_OWNER = "W0OWNER01";
const ANN = "W0ANN0001";
const CHAN_A = "C0CHANA01";
const CHAN_B = "C0CHANB01";

let fake: FakeSlack;
let app: RunningApp;
let dir: string;
let base: string;

/** Runs the install flow as a browser would: /slack/install, Slack's authorize page, back to the redirect with the state cookie. */
async function install(pick: string): Promise<{ status: number; body: string; callback: string; cookie: string }> {
  const start = await fetch(`${base}/slack/install`, { redirect: "manual" });
  expect(start.status).toBe(302);
  const cookie = (start.headers.get("set-cookie") ?? "").split(";")[0]!;
  expect(cookie).toMatch(/^slack-app-oauth-state=/);
  const authorize = new URL(start.headers.get("location")!);
  expect(authorize.origin + authorize.pathname).toBe(fake.authorizeUrl);
  expect(authorize.searchParams.get("redirect_uri")).toBe(`${base}/slack/oauth_redirect`);
  const back = await fetch(`${authorize.href}&${pick}`, { redirect: "manual" });
  expect(back.status).toBe(302);
  const callback = back.headers.get("location")!;
  const done = await fetch(callback, { headers: { cookie }, redirect: "manual" });
  return { status: done.status, body: await done.text(), callback, cookie };
}

const events = () => `${base}/slack/events`;

async function connection(thread: ThreadRef, owner: string) {
  return app.lifecycle.create({
    ...thread,
    ownerUserId: owner,
    service: "vendor",
    scope: "thread",
    credential: { kind: "fields", fields: { token: `canary-${randomBytes(8).toString("hex")}`, user: owner } },
    createdBy: owner,
  });
}

const threadA: ThreadRef = { teamId: TEAM_A, channelId: CHAN_A, threadTs: "1700000000.000100" };
const threadB: ThreadRef = { teamId: TEAM_B, channelId: CHAN_B, threadTs: "1700000000.000200" };

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-tenants-"));
  fake = await startFakeSlack({
    teams: [
      {
        id: TEAM_A,
        name: "Team A",
        users: [ALICE, { id: ADMIN_A, isAdmin: true }],
        channels: { [CHAN_A]: [ALICE, ADMIN_A] },
      },
      {
        id: TEAM_B,
        name: "Team B",
        users: [CAROL, { id: ADMIN_B, isAdmin: true }],
        channels: { [CHAN_B]: [CAROL, ADMIN_B] },
      },
      { id: GRID_1, enterpriseId: ORG, users: [{ id: ORG_OWNER, isOwner: true }, ANN], channels: { C0GRIDC01: [ANN] } },
      { id: GRID_2, enterpriseId: ORG, users: [ANN], channels: { C0GRIDC02: [ANN] } },
    ],
    enterprises: [{ id: ORG, name: "Starship" }],
    oauth: { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET },
  });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const config = loadConfig({
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: dir,
    PORT: String(port),
    SLAUDE_PUBLIC_URL: base,
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    SLAUDE_HOST_TOKENS: `${TEAM_A}:host-token-a-${"a".repeat(32)}`,
    SLAUDE_ADMINS: `${TEAM_A}:${ADMIN_A}`,
    SLACK_CLIENT_ID: CLIENT_ID,
    SLACK_CLIENT_SECRET: CLIENT_SECRET,
    SLACK_STATE_SECRET: `state-secret-${randomBytes(8).toString("hex")}`,
    SLACK_SIGNING_SECRET: SIGNING,
    SLACK_API_URL: fake.apiUrl,
    SLACK_OAUTH_AUTHORIZE_URL: fake.authorizeUrl,
    SLAUDE_SLACK_ALLOWED_TEAMS: [TEAM_A, TEAM_B, ORG].join(","),
    PATH: process.env.PATH ?? "",
  });
  app = await startApp({ config, registry: parseRegistry(fixtureRegistryDoc({}), "test") });
  for (const pick of [
    `fake_team=${TEAM_A}&fake_user=${ADMIN_A}`,
    `fake_team=${TEAM_B}&fake_user=${ADMIN_B}`,
    `fake_enterprise=${ORG}&fake_user=${ORG_OWNER}`,
  ]) {
    const r = await install(pick);
    expect(r.status, r.body).toBe(200);
  }
});

afterAll(async () => {
  await app?.close();
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the install flow", () => {
  it("stores each workspace and the org as its own installation, sealed: no Slack token in the database file", async () => {
    const live = await app.store.installations.list(10);
    expect(live.map((i) => i.teamId ?? i.enterpriseId).sort()).toEqual([ORG, TEAM_A, TEAM_B].sort());
    expect(live.find((i) => i.enterpriseId === ORG)?.isEnterpriseInstall).toBe(true);
    const audit = await app.store.audit.query({ event: "installation_installed" });
    expect(audit.map((r) => r.teamId).sort()).toEqual([ORG, TEAM_A, TEAM_B].sort());
    for (const f of readdirSync(dir).filter((f) => f.startsWith("slaude.db"))) {
      const bytes = readFileSync(path.join(dir, f)).toString("latin1");
      expect(bytes, f).not.toMatch(/xox[bep][-.]/);
    }
  });

  it("a state replayed with its cookie exchanges nothing", async () => {
    const r = await install(`fake_team=${TEAM_A}&fake_user=${ADMIN_A}`);
    expect(r.status).toBe(200);
    const exchanges = fake.callsOf("oauth.v2.access").length;
    const replay = await fetch(r.callback, { headers: { cookie: r.cookie }, redirect: "manual" });
    expect(replay.status).toBe(400);
    expect(fake.callsOf("oauth.v2.access")).toHaveLength(exchanges);
    // The reinstall of A was an update of the same tenant, not a second installation.
    expect((await app.store.installations.list(10)).filter((i) => i.teamId === TEAM_A)).toHaveLength(1);
  });

  it("refuses a workspace outside SLAUDE_SLACK_ALLOWED_TEAMS: audited, its fresh token revoked, nothing stored", async () => {
    fake.addTeam({ id: NEVER, name: "Outsider", users: [{ id: "UOUTSIDE1", isAdmin: true }] });
    const r = await install(`fake_team=${NEVER}&fake_user=UOUTSIDE1`);
    expect(r.status).toBe(403);
    expect(fake.callsOf("auth.revoke").length).toBeGreaterThan(0);
    expect((await app.store.installations.list(10)).some((i) => i.teamId === NEVER)).toBe(false);
    expect(
      (await app.store.audit.query({ event: "installation_refused" })).some(
        (a) => a.teamId === NEVER && a.decision === "not_allowed",
      ),
    ).toBe(true);
  });
});

describe("the tenant boundary", () => {
  it("a secret message in team B is deleted with B's token, and B's App Home is published with B's token", async () => {
    const tokenA = fake.installation({ teamId: TEAM_A })!.botToken;
    const tokenB = fake.installation({ teamId: TEAM_B })!.botToken;
    fake.clearCalls();
    const ids = fake.tenantIds({ teamId: TEAM_B });
    const r = await postTenantEvent(
      events(),
      SIGNING,
      tenantMessageEvent(ids, {
        user: CAROL,
        channelId: CHAN_B,
        text: `my password is hunter2hunter2 ghp_${"x".repeat(36)}`,
      }),
    );
    expect(r.status).toBe(200);
    await fake.waitFor("chat.delete");
    await postTenantEvent(
      events(),
      SIGNING,
      tenantEventCallback(ids, {
        type: "app_home_opened",
        user: CAROL,
        channel: "D0CAROL01",
        tab: "home",
        event_ts: "1700000000.000300",
      }),
    );
    await fake.waitFor("views.publish");
    const made = fake.calls.filter((c) => c.method !== "auth.test");
    expect(made.length).toBeGreaterThan(0);
    for (const c of made) expect(c.token, c.method).toBe(tokenB);
    expect(fake.callsWithToken(tokenA)).toEqual([]);
  });

  it("an event from a team that never installed is acked and causes no Slack call with any token", async () => {
    fake.clearCalls();
    const r = await postTenantEvent(
      events(),
      SIGNING,
      tenantMessageEvent(fake.tenantIds({ teamId: "T0NOBODY1" }), {
        user: "UNOBODY01",
        channelId: "C0NOBODY1",
        text: `token ghp_${"y".repeat(36)}`,
      }),
    );
    expect(r.status).toBe(200);
    // Once the refusal is audited, authorize has thrown: no listener can run after it.
    await expect
      .poll(
        async () =>
          (await app.store.audit.query({ event: "installation_refused" })).some((a) => a.teamId === "T0NOBODY1"),
        { timeout: 10_000 },
      )
      .toBe(true);
    expect(fake.callsForTeam("T0NOBODY1")).toEqual([]);
    expect(fake.calls).toEqual([]);
  });

  it("membership is answered from the thread's own team: a cross-team caller and a made-up team are not_member", async () => {
    await connection(threadA, ALICE);
    // Alice, a member in A, calls in a thread of B: B's roster (asked with B's token) does not have her.
    const inB = await app.broker.connectEmbedded(() => ({ ...threadB, userId: ALICE }));
    expect(
      (await mcpCall(inB.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE })).structured.code,
    ).toBe("not_member");
    const madeUp = await app.broker.connectEmbedded(() => ({
      teamId: "T0MADEUP1",
      channelId: CHAN_A,
      threadTs: "1700000000.000100",
      userId: ALICE,
    }));
    expect(
      (await mcpCall(madeUp.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE })).structured.code,
    ).toBe("not_member");
    expect(fake.callsForTeam("T0MADEUP1")).toEqual([]);
    // In her own team she runs (membership asked with A's token).
    const inA = await app.broker.connectEmbedded(() => ({ ...threadA, userId: ALICE }));
    expect(
      (await mcpCall(inA.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE })).structured.ranAs,
    ).toBe("own");
    for (const c of [inB, madeUp, inA]) await c.close();
  });

  it("A's admin cannot revoke B's connection", async () => {
    const carols = await connection(threadB, CAROL);
    const click = tenantBlockActionPayload(fake.tenantIds({ teamId: TEAM_B }), {
      userId: ADMIN_A,
      actionId: "admin_revoke_connection",
      value: carols.id,
      responseUrl: fake.responseUrl("admin-a"),
    });
    expect((await postTenantInteraction(events(), SIGNING, click)).status).toBe(200);
    // Bolt acks before the listener runs: wait for its audit row.
    await expect
      .poll(
        async () =>
          (await app.store.audit.query({ event: "admin_action", connectionId: carols.id })).map((a) => a.decision),
        { timeout: 10_000 },
      )
      .toEqual(["refused_not_admin"]);
    expect((await app.store.connections.get(carols.id))?.status).toBe("active");
    // B's own admin (a Slack admin of B, asked with B's token) can.
    await postTenantInteraction(
      events(),
      SIGNING,
      tenantBlockActionPayload(fake.tenantIds({ teamId: TEAM_B }), {
        userId: ADMIN_B,
        actionId: "admin_revoke_connection",
        value: carols.id,
        responseUrl: fake.responseUrl("admin-b"),
      }),
    );
    await expect
      .poll(async () => (await app.store.connections.get(carols.id))?.status, { timeout: 10_000 })
      .toBe("revoked");
  });

  it("an org-wide install serves every workspace of the org with the org's token", async () => {
    const orgToken = fake.installation({ enterpriseId: ORG })!.botToken;
    fake.clearCalls();
    for (const team of [GRID_1, GRID_2]) {
      const ids = fake.tenantIds({ enterpriseId: ORG }, team);
      await postTenantEvent(
        events(),
        SIGNING,
        tenantEventCallback(ids, {
          type: "app_home_opened",
          user: ANN,
          channel: "D0ANN0001",
          tab: "home",
          event_ts: "1700000000.000400",
        }),
      );
    }
    // Ann's two Home tabs (an earlier test's Home redraw for B's admin may land meanwhile: it is B's).
    const anns = () => fake.callsOf("views.publish").filter((c) => c.args.user_id === ANN);
    await expect.poll(() => anns().length, { timeout: 10_000 }).toBe(2);
    const publishes = anns();
    expect(publishes).toHaveLength(2);
    for (const c of publishes) expect(c.token).toBe(orgToken);
  });

  it("uninstalling B wipes exactly B: its connections revoked and audited, A untouched, B's sessions get no answer", async () => {
    const a = await connection(threadA, ADMIN_A);
    const b = await connection(threadB, ADMIN_B);
    const bSession = await app.broker.connectEmbedded(() => ({ ...threadB, userId: ADMIN_B }));
    const envelope = fake.uninstall({ teamId: TEAM_B });
    expect((await postTenantEvent(events(), SIGNING, envelope)).status).toBe(200);
    // The wipe runs after the ack: its installation row changes first, its connections right after.
    await expect.poll(async () => (await app.store.connections.get(b.id))?.status, { timeout: 10_000 }).toBe("revoked");
    expect((await app.store.connections.get(a.id))?.status).toBe("active");
    expect((await app.store.installations.list(10)).map((i) => i.teamId ?? i.enterpriseId).sort()).toEqual(
      [ORG, TEAM_A].sort(),
    );
    const revoked = await app.store.audit.query({ event: "connection_revoked", connectionId: b.id });
    expect(revoked[0]?.actor).toBe("slack:app_uninstalled");
    expect((await app.store.audit.query({ event: "installation_uninstalled" })).map((r) => r.teamId)).toEqual([TEAM_B]);
    const after = await mcpCall(bSession.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: ADMIN_B });
    expect(after.structured.status).not.toBe("ok");
    await bSession.close();
    // An event of the uninstalled team is refused like any unknown tenant's.
    fake.clearCalls();
    await postTenantEvent(
      events(),
      SIGNING,
      tenantMessageEvent(fake.tenantIds({ teamId: TEAM_B }), {
        user: CAROL,
        channelId: CHAN_B,
        text: `ghp_${"z".repeat(36)}`,
      }),
    );
    await expect
      .poll(
        async () =>
          (await app.store.audit.query({ event: "installation_refused" })).filter((r) => r.teamId === TEAM_B).length,
      )
      .toBeGreaterThan(0);
    expect(fake.calls).toEqual([]);
  });

  it("tokens_revoked disables the installation: its events are refused until it is reinstalled", async () => {
    const envelope = fake.revokeTokens({ teamId: TEAM_A });
    expect((await postTenantEvent(events(), SIGNING, envelope)).status).toBe(200);
    await expect
      .poll(async () => (await app.store.installations.list(10)).find((i) => i.teamId === TEAM_A)?.status, {
        timeout: 10_000,
      })
      .toBe("disabled");
    fake.clearCalls();
    await postTenantEvent(
      events(),
      SIGNING,
      tenantMessageEvent(fake.tenantIds({ teamId: TEAM_A }), {
        user: ALICE,
        channelId: CHAN_A,
        text: `ghp_${"w".repeat(36)}`,
      }),
    );
    await expect
      .poll(
        async () =>
          (await app.store.audit.query({ event: "installation_refused" })).filter(
            (r) => r.teamId === TEAM_A && r.decision === "installation_disabled",
          ).length,
      )
      .toBeGreaterThan(0);
    expect(fake.calls).toEqual([]);
    const again = await install(`fake_team=${TEAM_A}&fake_user=${ADMIN_A}`);
    expect(again.status).toBe(200);
    expect((await app.store.installations.list(10)).find((i) => i.teamId === TEAM_A)?.status).toBe("active");
  });
});
