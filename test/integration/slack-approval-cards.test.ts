// Approval cards show what is approved (issue 9 item 11), end to end: real Bolt (HTTP mode) against
// the fake Slack Web API with signed requests, real vendor children and a real SQLite file.
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { argumentsShown, formattedTexts } from "../fixtures/slack/block-text.js";
import { type FakeSlack, startFakeSlack } from "../fixtures/slack/fake-slack-api.js";
import { blockActionPayload, postSlackInteraction } from "../fixtures/slack/signed-request.js";
import { fixtureRegistryDoc, mcpCall } from "./broker-harness.js";

const ALICE = "UALICE01";
const BOB = "UBOB0002";
const SECRET = `signing-secret-${randomBytes(8).toString("hex")}`;

let fake: FakeSlack;
let app: RunningApp;
let dir: string;
let writeLog: string;
const thread = { teamId: "", channelId: "C0THREAD1", threadTs: "1700000000.000100" };

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-cards-"));
  writeLog = path.join(dir, "writes.jsonl");
  fake = await startFakeSlack({ admins: [] });
  thread.teamId = fake.teamId;
  fake.setMembers(thread.channelId, [ALICE, BOB]);
  const config = loadConfig({
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: dir,
    PORT: "0",
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    SLAUDE_HOST_TOKENS: `host-token-${"x".repeat(32)}`,
    SLACK_BOT_TOKEN: fake.botToken,
    SLACK_SIGNING_SECRET: SECRET,
    SLACK_API_URL: fake.apiUrl,
    SLAUDE_APPROVAL_TIMEOUT_SECONDS: "60",
    PATH: process.env.PATH ?? "",
  });
  app = await startApp({ config, registry: parseRegistry(fixtureRegistryDoc({ VENDOR_WRITE_LOG: writeLog }), "test") });
});

afterEach(async () => {
  await app.close();
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

async function connectAlice(token = `canary-${randomBytes(10).toString("hex")}`) {
  await app.lifecycle.create({
    teamId: thread.teamId,
    ownerUserId: ALICE,
    service: "vendor",
    scope: "thread",
    channelId: thread.channelId,
    threadTs: thread.threadTs,
    credential: { kind: "fields", fields: { token, user: ALICE } },
    createdBy: ALICE,
  });
  return token;
}

/** Bob's session in Alice's thread, and a call waiting for Alice's card. */
async function bobAsks(tool: string, args: Record<string, unknown>) {
  const s = await app.broker.connectEmbedded(() => ({ ...thread, userId: BOB }));
  const pending = mcpCall(s.client, { tool, args, on_behalf_of: BOB });
  const post = await fake.waitFor("chat.postMessage", (c) => c.args.channel === `D${ALICE}`, 20_000);
  const blocks = post.args.blocks as Record<string, unknown>[];
  const msg = { channel: `D${ALICE}`, ts: String(post.response?.ts) };
  const decisions = blocks
    .filter((b) => b.type === "actions")
    .flatMap((b) => b.elements as { action_id: string; value: string }[]);
  const view = blocks
    .map((b) => b.accessory as { action_id?: string; value?: string } | undefined)
    .find((a) => a?.action_id === "approval_view_args");
  return {
    s,
    pending,
    post,
    blocks,
    msg,
    buttons: Object.fromEntries(decisions.map((e) => [e.action_id, e.value])),
    viewValue: view?.value,
  };
}

function click(
  user: string,
  actionId: string,
  value: string,
  msg: { channel: string; ts: string },
  responseId: string,
) {
  return postSlackInteraction(
    `${app.url}/slack/events`,
    SECRET,
    blockActionPayload({
      userId: user,
      teamId: thread.teamId,
      actionId,
      value,
      channelId: msg.channel,
      messageTs: msg.ts,
      responseUrl: fake.responseUrl(responseId),
    }),
  );
}

/** Alice denies; resolves once the call is refused and the card is updated (nothing left in flight). */
async function deny(c: Awaited<ReturnType<typeof bobAsks>>) {
  await click(ALICE, "approval_deny", c.buttons.approval_deny!, c.msg, "deny");
  expect((await c.pending).structured.code).toBe("approval_denied");
  await fake.waitFor("chat.update", (x) => x.args.ts === c.msg.ts, 15_000);
  await fake.waitFor(
    "chat.postMessage",
    (x) => x.args.channel === thread.channelId && String(x.args.text).includes("declined"),
    15_000,
  );
  await c.s.close();
}

async function responseText(id: string): Promise<string> {
  return vi.waitFor(
    () => {
      const r = fake.responses.find((x) => x.id === id);
      if (!r) throw new Error(`no response ${id}`);
      return JSON.stringify(r.body);
    },
    { timeout: 15_000, interval: 20 },
  );
}

/** What the owner reads for each argument: a string verbatim, anything else as indented JSON. */
const expectedText = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v, null, 2));

describe("approval cards show what is approved", () => {
  it("12 arguments with a long rm -rf: the owner's modal shows every one exactly; only the owner can open it", async () => {
    await connectAlice();
    const command = `cd /srv/app && ${"tar czf backup.tgz ./data && ".repeat(6)}rm -rf /srv/app/data --no-preserve-root`;
    const args: Record<string, unknown> = {
      command,
      id: "7",
      value: "v",
      retries: 3,
      dry_run: false,
      env: { STAGE: "prod", paths: ["/srv", "/var"] },
      note: null,
      a8: "eight",
      a9: "ninth argument",
      a10: "10",
      a11: 11,
      a12: "the twelfth",
    };
    expect(Object.keys(args)).toHaveLength(12);
    expect(command.length).toBeGreaterThan(120);
    const c = await bobAsks("write_item", args);
    // A write: Just once and Deny; twelve arguments are too many for the message, so it points to the modal.
    expect(Object.keys(c.buttons).sort()).toEqual(["approval_allow_once", "approval_deny"]);
    expect(c.viewValue).toBeDefined();
    expect(JSON.stringify(c.blocks)).toContain("View all arguments");
    for (const t of formattedTexts(c.blocks)) expect(t).not.toContain("rm -rf");

    // Bob (not the owner) cannot open it: a private refusal, no modal.
    await click(BOB, "approval_view_args", c.viewValue!, c.msg, "view-bob");
    expect(await responseText("view-bob")).toContain("Only the account owner");
    expect(fake.callsOf("views.open")).toHaveLength(0);

    // Alice opens it with her click's trigger: every argument, exactly, as code.
    await click(ALICE, "approval_view_args", c.viewValue!, c.msg, "view-alice");
    const opened = await fake.waitFor("views.open", () => true, 15_000);
    expect(opened.response?.ok).toBe(true);
    const view = opened.args.view as { type: string; blocks: unknown[] };
    expect(view.type).toBe("modal");
    expect(Object.fromEntries(argumentsShown(view.blocks))).toEqual(
      Object.fromEntries(Object.entries(args).map(([k, v]) => [k, expectedText(v)])),
    );
    for (const t of formattedTexts(view.blocks)) expect(t).not.toContain("rm -rf");

    await deny(c);
    expect(existsSync(writeLog)).toBe(false);
    // Once answered, the arguments are no longer shown to anyone (the card's buttons are gone too).
    await click(ALICE, "approval_view_args", c.viewValue!, c.msg, "view-late");
    expect(await responseText("view-late")).toContain("no longer waiting");
    expect(fake.callsOf("views.open")).toHaveLength(1);
  });

  it("arguments too large to show in full: the card says so and offers only Deny; an Allow click is refused and audited", async () => {
    await connectAlice();
    const c = await bobAsks("write_item", { id: "1", value: "x".repeat(30_000) });
    expect(Object.keys(c.buttons)).toEqual(["approval_deny"]);
    expect(c.viewValue).toBeUndefined();
    expect(JSON.stringify(c.blocks)).toContain("too large to show in full");
    expect(JSON.stringify(c.blocks)).not.toContain("x".repeat(100));

    // A click on an Allow that the card never offered (same value, forged action) changes nothing.
    await click(ALICE, "approval_allow_once", c.buttons.approval_deny!, c.msg, "forged");
    expect(await responseText("forged")).toContain("can only be denied");
    expect((await app.store.audit.query({ event: "approval_rejected_click" })).map((e) => e.decision)).toEqual([
      "not_offered",
    ]);

    await deny(c);
    expect(await app.store.grants.list({ liveOnly: true })).toHaveLength(0);
    expect(existsSync(writeLog)).toBe(false);
  });

  it("hostile mrkdwn in values is rendered inert on the card and in the modal", async () => {
    await connectAlice();
    const hostile: Record<string, unknown> = {
      id: "<!channel> urgent",
      here: "<!here|everyone>",
      fmt: "*approve* _now_ ~or else~",
      fence: "```\nclosing``` then *bold*",
      tick: "`rm -rf /`",
      mention: "<@UALICE01> said yes",
      link: "<https://evil.example/approve|Allow for thread>",
      ent: "&lt;!channel&gt;",
      "*name*<!channel>": "x",
    };
    const c = await bobAsks("read_item", hostile);
    const evil = [
      "<!channel>",
      "<!here",
      "*approve*",
      "```",
      "`rm",
      "<@UALICE01>",
      "evil.example",
      "&lt;!channel",
      "*name*",
    ];
    for (const t of [...formattedTexts(c.blocks), String(c.post.args.text)])
      for (const e of evil) expect(t, t).not.toContain(e);
    expect(Object.fromEntries(argumentsShown(c.blocks))).toEqual(hostile);
    expect(JSON.stringify(c.blocks)).not.toMatch(/"type":"(broadcast|user|link|channel)"/);

    await click(ALICE, "approval_view_args", c.viewValue!, c.msg, "view");
    const opened = await fake.waitFor("views.open", () => true, 15_000);
    const blocks = (opened.args.view as { blocks: unknown[] }).blocks;
    for (const t of formattedTexts(blocks)) for (const e of evil) expect(t, t).not.toContain(e);
    expect(Object.fromEntries(argumentsShown(blocks))).toEqual(hostile);

    await deny(c);
  });

  it("the owner's credential in an argument never appears; the card says the shown value differs and offers only Deny", async () => {
    const token = await connectAlice();
    const c = await bobAsks("read_item", { id: "1", header: `Authorization: Bearer ${token}` });
    const all = JSON.stringify(c.post.args);
    expect(all).not.toContain(token);
    expect(all).toContain("[redacted]");
    expect(all).toContain("contains your vendor credential");
    expect(Object.keys(c.buttons)).toEqual(["approval_deny"]);

    await click(ALICE, "approval_view_args", c.viewValue!, c.msg, "view");
    const opened = await fake.waitFor("views.open", () => true, 15_000);
    expect(JSON.stringify(opened.args)).not.toContain(token);

    await deny(c);
  });
});
