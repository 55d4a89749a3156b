// The Slack app end to end: real Bolt (HTTP mode, mounted on the broker's server) against a fake
// Slack Web API on 127.0.0.1, with properly signed requests, real vendor children and a real SQLite file.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { type Clock, ManualClock } from "../../src/clock/clock.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { type FakeSlack, startFakeSlack } from "../fixtures/slack/fake-slack-api.js";
import {
  appHomeOpenedEvent,
  blockActionPayload,
  messageEvent,
  postSlackEvent,
  postSlackInteraction,
  postSlashCommand,
  slashCommand,
} from "../fixtures/slack/signed-request.js";
import { until } from "../support/until.js";
import { fixtureRegistryDoc, mcpCall } from "./broker-harness.js";

const ALICE = "UALICE01";
const BOB = "UBOB0002";
const CAROL = "UCAROL03";
const ADMIN = "UADMIN04";
const SECRET = `signing-secret-${randomBytes(8).toString("hex")}`;

let fake: FakeSlack;
let app: RunningApp;
let dir: string;
let writeLog: string;
let thread: { teamId: string; channelId: string; threadTs: string };

async function boot(extraEnv: Record<string, string> = {}, clock?: Clock): Promise<RunningApp> {
  const config = loadConfig({
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: dir,
    PORT: "0",
    SLAUDE_ENCRYPTION_KEY: keyB64,
    SLAUDE_HOST_TOKENS: `host-token-${"x".repeat(32)}`,
    SLAUDE_ADMINS: ADMIN,
    SLACK_BOT_TOKEN: fake.botToken,
    SLACK_SIGNING_SECRET: SECRET,
    SLACK_API_URL: fake.apiUrl,
    SLAUDE_APPROVAL_TIMEOUT_SECONDS: "20",
    PATH: process.env.PATH ?? "",
    ...extraEnv,
  });
  return startApp({
    config,
    registry: parseRegistry(fixtureRegistryDoc({ VENDOR_WRITE_LOG: writeLog }), "test"),
    ...(clock ? { clock } : {}),
  });
}

let keyB64: string;
beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-slack-"));
  writeLog = path.join(dir, "writes.jsonl");
  keyB64 = randomBytes(32).toString("base64");
  fake = await startFakeSlack({ admins: [] });
  thread = { teamId: fake.teamId, channelId: "C0THREAD1", threadTs: "1700000000.000100" };
  fake.setMembers(thread.channelId, [ALICE, BOB, ADMIN]);
  app = await boot();
});

afterEach(async () => {
  await app.close();
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

const events = () => `${app.url}/slack/events`;

async function connectOwner(owner: string, token = `canary-${randomBytes(10).toString("hex")}`) {
  const c = await app.lifecycle.create({
    teamId: thread.teamId,
    ownerUserId: owner,
    service: "vendor",
    scope: "thread",
    channelId: thread.channelId,
    threadTs: thread.threadTs,
    credential: { kind: "fields", fields: { token, user: owner } },
    createdBy: owner,
  });
  return { connection: c, token };
}

async function session() {
  const turn = { user: ALICE };
  const s = await app.broker.connectEmbedded(() => ({ ...thread, userId: turn.user }));
  return { ...s, turn };
}

/** The approval card DM'd to `owner`, once it arrives. */
async function cardFor(owner: string, nth = 0) {
  const dm = `D${owner}`;
  await fake.waitFor(
    "chat.postMessage",
    (c) => c.args.channel === dm && fake.callsOf("chat.postMessage").filter((x) => x.args.channel === dm).length > nth,
    15_000,
  );
  // The card as posted (it may have been updated since).
  const post = fake.callsOf("chat.postMessage").filter((x) => x.args.channel === dm)[nth]!;
  const msg = { channel: dm, ts: String(post.response?.ts), blocks: post.args.blocks as unknown[] };
  const actions = (msg.blocks as { type: string; elements?: { action_id: string; value: string }[] }[]).find(
    (b) => b.type === "actions",
  )!;
  return { msg, buttons: Object.fromEntries(actions.elements!.map((e) => [e.action_id, e.value])) };
}

function click(user: string, actionId: string, value: string, msg?: { channel: string; ts: string }) {
  return postSlackInteraction(
    events(),
    SECRET,
    blockActionPayload({
      userId: user,
      teamId: thread.teamId,
      actionId,
      value,
      ...(msg ? { channelId: msg.channel, messageTs: msg.ts, responseUrl: fake.responseUrl(`click-${user}`) } : {}),
    }),
  );
}

describe("approval cards", () => {
  it("full borrow flow: card to the owner, Allow for thread, silent reads, writes ask again with only the approved args", async () => {
    await connectOwner(ALICE);
    const s = await session();
    s.turn.user = BOB;
    const pending = mcpCall(s.client, { tool: "read_item", args: { id: "42" }, on_behalf_of: BOB });
    const { msg, buttons } = await cardFor(ALICE);
    const text = JSON.stringify(msg.blocks);
    expect(text).toContain(`<@${BOB}>`);
    expect(text).toContain("read_item");
    // The value is shown as code (rich_text), never as mrkdwn (issue 9 item 11).
    expect(text).toContain('{"type":"rich_text_preformatted","elements":[{"type":"text","text":"42"}]}');
    expect(Object.keys(buttons).sort()).toEqual(["approval_allow_once", "approval_allow_thread", "approval_deny"]);
    // The borrower is told in the thread that the owner was asked.
    const note = await fake.waitFor(
      "chat.postMessage",
      (c) => c.args.channel === thread.channelId && c.args.thread_ts === thread.threadTs,
    );
    expect(String(note.args.text)).toContain(`<@${ALICE}>`);

    const r = await click(ALICE, "approval_allow_thread", buttons.approval_allow_thread!, msg);
    expect(r.status).toBe(200);
    const done = await pending;
    expect(done.structured.ranAs).toBe("approval_thread");
    // The card is updated in place and the thread hears the outcome.
    await fake.waitFor("chat.update", (c) => c.args.ts === msg.ts);
    expect(JSON.stringify(fake.messageAt(msg.channel, msg.ts)?.blocks)).toContain("allowed for this thread");
    expect(fake.messageAt(msg.channel, msg.ts)?.blocks?.some((b) => (b as { type: string }).type === "actions")).toBe(
      false,
    );

    const silent = await mcpCall(s.client, { tool: "read_item", args: { id: "43" }, on_behalf_of: BOB });
    expect(silent.structured.ranAs).toBe("grant");
    expect(fake.messages.filter((m) => m.channel === `D${ALICE}`)).toHaveLength(1);

    const write = mcpCall(s.client, {
      tool: "write_item",
      args: { id: "7", value: "approved-value" },
      on_behalf_of: BOB,
    });
    const second = await cardFor(ALICE, 1);
    expect(Object.keys(second.buttons).sort()).toEqual(["approval_allow_once", "approval_deny"]);
    expect(JSON.stringify(second.msg.blocks)).toContain("approved-value");
    await click(ALICE, "approval_allow_once", second.buttons.approval_allow_once!, second.msg);
    const w = await write;
    expect(w.structured.ranAs).toBe("approval_once");
    const writes = readFileSync(writeLog, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { id: string; value: string });
    expect(writes.map((x) => [x.id, x.value])).toEqual([["7", "approved-value"]]);
    await s.close();
  });

  it("Just once runs one call and grants nothing; Deny refuses", async () => {
    await connectOwner(ALICE);
    const s = await session();
    s.turn.user = BOB;
    const p1 = mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: BOB });
    const c1 = await cardFor(ALICE, 0);
    await click(ALICE, "approval_allow_once", c1.buttons.approval_allow_once!, c1.msg);
    expect((await p1).structured.ranAs).toBe("approval_once");
    const p2 = mcpCall(s.client, { tool: "read_item", args: { id: "2" }, on_behalf_of: BOB });
    const c2 = await cardFor(ALICE, 1);
    await click(ALICE, "approval_deny", c2.buttons.approval_deny!, c2.msg);
    const r2 = await p2;
    expect(r2.structured.code).toBe("approval_denied");
    expect(await app.store.grants.list({ liveOnly: true })).toHaveLength(0);
    await fake.waitFor("chat.update", (c) => c.args.ts === c2.msg.ts);
    expect(JSON.stringify(fake.messageAt(c2.msg.channel, c2.msg.ts)?.blocks)).toContain("denied");
    await s.close();
  });

  it("a non-owner click and a replayed click change nothing and are audited", async () => {
    await connectOwner(ALICE);
    const s = await session();
    s.turn.user = BOB;
    const p = mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: BOB });
    const c = await cardFor(ALICE);
    await click(BOB, "approval_allow_thread", c.buttons.approval_allow_thread!, c.msg);
    await click(ALICE, "approval_deny", c.buttons.approval_deny!, c.msg);
    expect((await p).structured.code).toBe("approval_denied");
    await click(ALICE, "approval_allow_thread", c.buttons.approval_allow_thread!, c.msg);
    await expect
      .poll(() => app.store.audit.count({ event: "approval_rejected_click" }), { timeout: 10_000, interval: 20 })
      .toBe(2);
    const rejected = await app.store.audit.query({ event: "approval_rejected_click" });
    expect(rejected.map((e) => e.decision).sort()).toEqual(["already_decided", "not_owner"]);
    expect(await app.store.grants.list({ liveOnly: true })).toHaveLength(0);
    expect(fake.responses.some((r) => JSON.stringify(r.body).includes("Only the account owner"))).toBe(true);
    await s.close();
  });

  it("a timeout marks the card expired and refuses the call", async () => {
    await app.close();
    // Time is the app's clock: the approval expires when the test moves it past the timeout, not in real time.
    const clock = new ManualClock(Date.now());
    app = await boot({ SLAUDE_APPROVAL_TIMEOUT_SECONDS: "120" }, clock);
    await connectOwner(ALICE);
    const s = await session();
    s.turn.user = BOB;
    let r: Awaited<ReturnType<typeof mcpCall>> | undefined;
    const pending = mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: BOB }).then((x) => (r = x));
    const c = await cardFor(ALICE);
    await clock.advanceAsync(119_999);
    expect(await app.store.audit.count({ event: "approval_decided" })).toBe(0);
    await clock.advanceAsync(1);
    // Far less than the 120 s a real-time timer would take.
    await vi.waitFor(() => expect(r?.structured.code).toBe("approval_expired"), { timeout: 20_000, interval: 20 });
    await pending;
    await fake.waitFor("chat.update", (x) => x.args.ts === c.msg.ts);
    expect(JSON.stringify(fake.messageAt(c.msg.channel, c.msg.ts)?.blocks)).toContain("expired");
    await click(ALICE, "approval_allow_thread", c.buttons.approval_allow_thread!, c.msg);
    expect(await app.store.grants.list({ liveOnly: true })).toHaveLength(0);
    await s.close();
  });

  it("a shutdown while waiting: the call fails clearly and the card is marked expired", async () => {
    await connectOwner(ALICE);
    const s = await session();
    s.turn.user = BOB;
    const p = mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: BOB });
    const c = await cardFor(ALICE);
    await app.close();
    const outcome = await p;
    expect(outcome.structured.code).toBe("approval_interrupted");
    expect(outcome.text).toContain("restarted");
    await fake.waitFor("chat.update", (x) => x.args.ts === c.msg.ts);
    expect(JSON.stringify(fake.messageAt(c.msg.channel, c.msg.ts)?.blocks)).toContain("expired");
    app = await boot();
    await click(ALICE, "approval_allow_thread", c.buttons.approval_allow_thread!, c.msg);
    expect(await app.store.grants.list({ liveOnly: true })).toHaveLength(0);
  });

  it("approvals left pending by a crashed process are expired at the next start and their cards updated", async () => {
    const { connection } = await connectOwner(ALICE);
    // What a SIGKILLed broker leaves: a pending row whose card is in the owner's DM.
    const card = (await (
      await fetch(`${fake.apiUrl}chat.postMessage`, {
        method: "POST",
        headers: { authorization: `Bearer ${fake.botToken}`, "content-type": "application/json" },
        body: JSON.stringify({ channel: `D${ALICE}`, text: "card" }),
      })
    ).json()) as { ts: string };
    const now = Date.now();
    await app.store.approvals.create(
      {
        id: "appr_crashleftover",
        nonce: "n0nce",
        connectionId: connection.id,
        ...thread,
        ownerUserId: ALICE,
        borrowerUserId: BOB,
        service: "vendor",
        tool: "read_item",
        argsHash: "0".repeat(64),
        status: "pending",
        createdAt: now,
        expiresAt: now + 600_000,
        decidedAt: null,
        decidedBy: null,
        cardChannel: null,
        cardTs: null,
      },
      [],
    );
    await app.store.approvals.setCard("appr_crashleftover", `D${ALICE}`, card.ts);
    await app.close();
    expect((await fake.callsOf("chat.update")).filter((x) => x.args.ts === card.ts)).toHaveLength(0);
    app = await boot();
    await fake.waitFor("chat.update", (x) => x.args.ts === card.ts);
    expect((await app.store.approvals.get("appr_crashleftover"))?.status).toBe("expired");
    expect(JSON.stringify(fake.messageAt(`D${ALICE}`, card.ts)?.blocks)).toContain("expired");
  });

  it("Slack unreachable when asking: the borrow is refused (fail closed)", async () => {
    await connectOwner(ALICE);
    fake.setFailing("conversations.open", "drop");
    const s = await session();
    s.turn.user = BOB;
    const r = await mcpCall(s.client, { tool: "read_item", args: { id: "1" }, on_behalf_of: BOB });
    expect(r.structured.code).toBe("approval_unavailable");
    await s.close();
  });
});

describe("request verification", () => {
  it("rejects a bad signature and a stale timestamp; nothing runs", async () => {
    const body = slashCommand({
      teamId: thread.teamId,
      channelId: thread.channelId,
      userId: ALICE,
      command: "/connections",
      text: "",
      responseUrl: fake.responseUrl("x"),
    });
    expect((await postSlashCommand(events(), SECRET, body, { badSignature: true })).status).toBe(401);
    expect(
      (await postSlashCommand(events(), SECRET, body, { timestamp: Math.floor(Date.now() / 1000) - 6 * 60 })).status,
    ).toBe(401);
    expect(fake.responses).toHaveLength(0);
    expect((await postSlashCommand(events(), SECRET, body)).status).toBe(200);
  });
});

describe("/connect, /connections, App Home and admin revoke", () => {
  it("/connect shows a consent card; a typed secret is never echoed or stored and the user is told to rotate it", async () => {
    const ok = await postSlashCommand(
      events(),
      SECRET,
      slashCommand({
        teamId: thread.teamId,
        channelId: thread.channelId,
        userId: ALICE,
        command: "/connect",
        text: "vendor",
        responseUrl: fake.responseUrl("c1"),
      }),
    );
    expect(ok.status).toBe(200);
    await waitForResponse("c1");
    const consent = JSON.stringify(fake.responses.find((r) => r.id === "c1")!.body);
    expect(consent).toContain("encrypted");
    expect(consent).toContain("consent_accept");

    const secret = `glpat-${randomBytes(16).toString("hex")}`;
    await postSlashCommand(
      events(),
      SECRET,
      slashCommand({
        teamId: thread.teamId,
        channelId: thread.channelId,
        userId: ALICE,
        command: "/connect",
        text: secret,
        responseUrl: fake.responseUrl("c2"),
      }),
    );
    await waitForResponse("c2");
    const warn = JSON.stringify(fake.responses.find((r) => r.id === "c2")!.body);
    expect(warn).toContain("rotate");
    expect(JSON.stringify(fake.calls) + JSON.stringify(fake.responses)).not.toContain(secret);
    expect(await app.store.connections.list({})).toHaveLength(0);
    for (const f of ["slaude.db", "slaude.db-wal"])
      expect(readFileSync(path.join(dir, f)).includes(Buffer.from(secret))).toBe(false);
  });

  it("/connections lists mine and grants with Revoke buttons; revoking takes effect on the next call", async () => {
    const { connection } = await connectOwner(ALICE);
    await postSlashCommand(
      events(),
      SECRET,
      slashCommand({
        teamId: thread.teamId,
        channelId: thread.channelId,
        userId: ALICE,
        command: "/connections",
        text: "",
        responseUrl: fake.responseUrl("l1"),
      }),
    );
    await waitForResponse("l1");
    const listing = JSON.stringify(fake.responses.find((r) => r.id === "l1")!.body);
    expect(listing).toContain(connection.id);
    expect(listing).toContain("revoke_connection");

    const s = await session();
    s.turn.user = ALICE;
    expect((await mcpCall(s.client, { tool: "echo", args: { text: "x" }, on_behalf_of: ALICE })).structured.ranAs).toBe(
      "own",
    );
    // Bob cannot revoke Alice's connection.
    await click(BOB, "revoke_connection", connection.id, { channel: thread.channelId, ts: "1700000000.000200" });
    expect((await app.store.connections.get(connection.id))?.status).toBe("active");
    await click(ALICE, "revoke_connection", connection.id, { channel: thread.channelId, ts: "1700000000.000200" });
    await expect
      .poll(async () => (await app.store.connections.get(connection.id))?.status, { timeout: 10_000, interval: 20 })
      .toBe("revoked");
    expect(app.broker.pool.has(connection.id)).toBe(false);
    expect(
      (await mcpCall(s.client, { tool: "echo", args: { text: "x" }, on_behalf_of: ALICE })).structured.status,
    ).toBe("needs_connect");
    await s.close();
  });

  it("App Home shows a user their connections and grants, and an admin everything plus audit; revoke from Home works", async () => {
    const { connection } = await connectOwner(ALICE);
    await connectOwner(BOB);
    await postSlackEvent(events(), SECRET, appHomeOpenedEvent({ teamId: thread.teamId, userId: ALICE }));
    await fake.waitFor("views.publish", (c) => c.args.user_id === ALICE);
    const home = JSON.stringify(fake.homeViews.get(ALICE));
    expect(home).toContain("My connections");
    expect(home).toContain(connection.id);
    expect(home).not.toContain("All connections (admin)");

    await postSlackEvent(events(), SECRET, appHomeOpenedEvent({ teamId: thread.teamId, userId: ADMIN }));
    await fake.waitFor("views.publish", (c) => c.args.user_id === ADMIN);
    const adminHome = JSON.stringify(fake.homeViews.get(ADMIN));
    expect(adminHome).toContain("All connections (admin)");
    expect(adminHome).toContain("Recent audit");
    expect(adminHome).toContain(`<@${BOB}>`);

    // Revoke from the Home tab (no response_url): takes effect, and the Home is republished.
    await click(ALICE, "revoke_connection", connection.id);
    await expect
      .poll(async () => (await app.store.connections.get(connection.id))?.status, { timeout: 10_000, interval: 20 })
      .toBe("revoked");
  });

  it("admin revoke kills the child, wipes the credential, revokes grants, tells the owner and is audited; non-admins are refused", async () => {
    const { connection } = await connectOwner(ALICE);
    const s = await session();
    s.turn.user = ALICE;
    await mcpCall(s.client, { tool: "echo", args: { text: "x" }, on_behalf_of: ALICE });
    expect(app.broker.pool.has(connection.id)).toBe(true);
    await app.store.grants.create(
      {
        id: "grant_adminrevoke01",
        connectionId: connection.id,
        ...thread,
        ownerUserId: ALICE,
        borrowerUserId: BOB,
        service: "vendor",
        createdAt: Date.now(),
      },
      [],
    );

    await click(BOB, "admin_revoke_connection", connection.id);
    // The refusal's audit row proves the click was handled (it is written before any reply).
    await expect
      .poll(() => app.store.audit.count({ event: "admin_action" }), { timeout: 10_000, interval: 20 })
      .toBe(1);
    expect((await app.store.connections.get(connection.id))?.status).toBe("active");

    await click(ADMIN, "admin_revoke_connection", connection.id);
    await fake.waitFor(
      "chat.postMessage",
      (c) => c.args.channel === `D${ALICE}` && String(c.args.text).includes("admin"),
    );
    const row = await app.store.connections.get(connection.id);
    expect(row?.status).toBe("revoked");
    expect(row?.sealed).toBeNull();
    expect(app.broker.pool.has(connection.id)).toBe(false);
    expect(await app.store.grants.list({ liveOnly: true })).toHaveLength(0);
    const admin = await app.store.audit.query({ event: "admin_action" });
    expect(admin.map((a) => [a.actor, a.decision])).toEqual([
      [BOB, "refused_not_admin"],
      [ADMIN, "revoke"],
    ]);
    await s.close();
  });
});

describe("consent leads to a one-time login link", () => {
  it("Continue mints a link only for the card's user; the login completes and the owner is told in a DM", async () => {
    await postSlashCommand(
      events(),
      SECRET,
      slashCommand({
        teamId: thread.teamId,
        channelId: thread.channelId,
        userId: ALICE,
        command: "/connect",
        text: "vendor",
        responseUrl: fake.responseUrl("cc"),
      }),
    );
    await waitForResponse("cc");
    const card = fake.responses.find((r) => r.id === "cc")!.body as {
      blocks: { type: string; elements?: { action_id: string; value?: string }[] }[];
    };
    const cont = card.blocks.flatMap((b) => b.elements ?? []).find((e) => e.action_id === "consent_accept")!;
    expect(cont.value).toBeTruthy();

    // Someone else pressing Continue (a forwarded card) gets nothing.
    await click(BOB, "consent_accept", cont.value!, { channel: thread.channelId, ts: "1700000000.000300" });
    expect((await app.store.audit.query({ event: "login_refused" })).map((a) => a.decision)).toContain(
      "consent_not_yours",
    );

    await postSlackInteraction(
      events(),
      SECRET,
      blockActionPayload({
        userId: ALICE,
        teamId: thread.teamId,
        actionId: "consent_accept",
        value: cont.value!,
        channelId: thread.channelId,
        messageTs: "1700000000.000301",
        responseUrl: fake.responseUrl("link"),
      }),
    );
    await waitForResponse("link");
    const linkBody = JSON.stringify(fake.responses.find((r) => r.id === "link")!.body);
    const url = /"url":"([^"]+\/login\/l\/[A-Za-z0-9_-]{43})"/.exec(linkBody)?.[1];
    expect(url).toBeTruthy();
    // The link never went anywhere but that ephemeral answer: not into any channel message.
    expect(JSON.stringify(fake.calls)).not.toContain(new URL(url!).pathname);

    const local = app.url + new URL(url!).pathname;
    const page = await fetch(local);
    expect(page.status).toBe(200);
    const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
    const sessionId = cookie.split("=")[1]!.split(".")[0]!;
    const { default: WebSocket } = await import("ws");
    const ws = new WebSocket(`${app.url.replace("http", "ws")}/login/ws?s=${sessionId}`, {
      headers: { origin: app.url, cookie },
    });
    const seen: { type: string; state?: string }[] = [];
    ws.on("message", (d) => seen.push(JSON.parse(String(d)) as { type: string }));
    await new Promise((r) => ws.once("open", r));
    ws.send(JSON.stringify({ type: "viewport", width: 800, height: 600 }));
    await until(() => seen.some((m) => m.type === "paste_form"));
    ws.send(
      JSON.stringify({ type: "paste", fields: { token: `canary-${randomBytes(8).toString("hex")}`, user: "alice" } }),
    );
    await until(() => seen.some((m) => m.state === "captured"));
    ws.close();
    const [conn] = await app.store.connections.list({ ownerUserId: ALICE });
    expect(conn).toMatchObject({ service: "vendor", scope: "user", status: "active" });
    await fake.waitFor(
      "chat.postMessage",
      (c) => c.args.channel === `D${ALICE}` && String(c.args.text).includes("is ready"),
    );
  });
});

describe("membership and turns from events", () => {
  it("a caller not in conversations.members (paginated) is refused", async () => {
    fake.setMembers(thread.channelId, [ALICE, BOB, ADMIN, "UOTHER05", "UOTHER06"]);
    await connectOwner(CAROL);
    const s = await session();
    s.turn.user = CAROL;
    const r = await mcpCall(s.client, { tool: "echo", args: { text: "x" }, on_behalf_of: CAROL });
    expect(r.structured.code).toBe("not_member");
    expect(fake.callsOf("conversations.members").length).toBeGreaterThan(1);
    await s.close();
  });

  it("human messages in a served thread set the turn; bot messages never do", async () => {
    app.broker.serverForThread(thread);
    // A second served thread is the witness: Bolt handles events in the order they arrive, so once a
    // later message has moved the witness's turn, the message sent before it has been handled too.
    const witness = { ...thread, threadTs: "1700000000.888888" };
    app.broker.serverForThread(witness);
    const msg = (user: string, botId?: string, t = thread) =>
      postSlackEvent(
        events(),
        SECRET,
        messageEvent({
          teamId: t.teamId,
          channelId: t.channelId,
          user,
          text: "hello",
          threadTs: t.threadTs,
          ...(botId ? { botId } : {}),
        }),
      );
    await msg(ALICE);
    await until(async () => (await app.broker.turns.current(thread)) === ALICE);
    await msg(BOB, "B0SOMEBOT");
    await msg(CAROL, undefined, witness);
    await until(async () => (await app.broker.turns.current(witness)) === CAROL);
    expect(await app.broker.turns.current(thread)).toBe(ALICE);
    await msg(BOB);
    await until(async () => (await app.broker.turns.current(thread)) === BOB);
    // A thread nobody serves is not tracked.
    const other = { ...thread, threadTs: "1700000000.999999" };
    await msg(ALICE, undefined, other);
    await msg(ALICE, undefined, witness);
    await until(async () => (await app.broker.turns.current(witness)) === ALICE);
    expect(await app.broker.turns.current(other)).toBeUndefined();
  });
});

describe("ordering and deduplication of message events", () => {
  const msgAt = (user: string, ts: string) =>
    messageEvent({
      teamId: thread.teamId,
      channelId: thread.channelId,
      user,
      text: "hello",
      threadTs: thread.threadTs,
      ts,
    });

  it("a replayed or retried older message event (freshly signed, new event_id) does not move the turn back", async () => {
    app.broker.serverForThread(thread);
    const now = Math.floor(Date.now() / 1000);
    const aliceTs = `${now - 120}.000100`;
    expect((await postSlackEvent(events(), SECRET, msgAt(ALICE, aliceTs))).status).toBe(200);
    await until(async () => (await app.broker.turns.current(thread)) === ALICE);
    expect((await postSlackEvent(events(), SECRET, msgAt(BOB, `${now - 60}.000100`))).status).toBe(200);
    await until(async () => (await app.broker.turns.current(thread)) === BOB);
    // Alice's earlier message again, within Slack's 5-minute window, as a retry and as a replay.
    const replay = await postSlackEvent(events(), SECRET, msgAt(ALICE, aliceTs), {
      headers: { "X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout" },
    });
    expect(replay.status).toBe(200);
    const replay2 = await postSlackEvent(events(), SECRET, msgAt(ALICE, aliceTs));
    expect(replay2.status).toBe(200);
    // Bolt runs a plain message's listener before its HTTP answer reaches us (no I/O in between), so
    // a replay that moved the turn would show here.
    expect(await app.broker.turns.current(thread)).toBe(BOB);
    // A newer message by Carol is applied, and with her turn set Bob's older message is ignored too.
    await postSlackEvent(events(), SECRET, msgAt(CAROL, `${now - 30}.000100`));
    await until(async () => (await app.broker.turns.current(thread)) === CAROL);
    await postSlackEvent(events(), SECRET, msgAt(BOB, `${now - 60}.000200`));
    expect(await app.broker.turns.current(thread)).toBe(CAROL);
    await postSlackEvent(events(), SECRET, msgAt(ALICE, `${now}.000100`));
    await until(async () => (await app.broker.turns.current(thread)) === ALICE);
  });

  it("a duplicated event_id is applied once", async () => {
    app.broker.serverForThread(thread);
    // A message carrying a secret gets it deleted and the author warned: one side effect per event.
    const body = messageEvent({
      teamId: thread.teamId,
      channelId: thread.channelId,
      user: ALICE,
      text: "my token is xoxb-1234567890-1234567890-abcdefghijklmnopqrstuvwx",
      threadTs: thread.threadTs,
    });
    expect((await postSlackEvent(events(), SECRET, body)).status).toBe(200);
    await fake.waitFor("chat.postEphemeral", (c) => c.args.user === ALICE);
    expect(
      (
        await postSlackEvent(events(), SECRET, body, {
          headers: { "X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout" },
        })
      ).status,
    ).toBe(200);
    expect((await postSlackEvent(events(), SECRET, body)).status).toBe(200);
    // A different event afterwards is processed: once its warning is out, the duplicates had their chance.
    const witness = messageEvent({
      teamId: thread.teamId,
      channelId: thread.channelId,
      user: BOB,
      text: "use glpat-abcdefghijklmnopqrst for it",
      threadTs: thread.threadTs,
    });
    await postSlackEvent(events(), SECRET, witness);
    await fake.waitFor("chat.postEphemeral", (c) => c.args.user === BOB);
    expect(fake.callsOf("chat.postEphemeral").filter((c) => c.args.user === ALICE)).toHaveLength(1);
    expect(fake.callsOf("chat.delete").filter((c) => c.args.ts === (body.event as { ts: string }).ts)).toHaveLength(1);
  });
});

async function waitForResponse(id: string): Promise<void> {
  await until(() => fake.responses.some((r) => r.id === id));
}
