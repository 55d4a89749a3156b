// The local workspace end to end: a real app started as `npm start` would (NODE_ENV=development,
// no Slack), real SQLite, a real vendor child, a real MCP client over Streamable HTTP with the host
// token and X-Slaude-Thread, and POST /v1/turns saying whose turn it is.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { parseRegistry } from "../../src/config/registry.js";
import { cardFactList } from "../../src/domain/card.js";
import type { ThreadRef } from "../../src/domain/thread.js";
import { memoryLogger } from "../../src/log/logger.js";
import { LocalApprovalChannel } from "../../src/workspace/local/adapters.js";
import type { LocalWorkspaceService } from "../../src/workspace/local/local-workspace.js";
import type { InboxItem, LocalWorkspace } from "../../src/workspace/local/model.js";
import { fixtureRegistryDoc, mcpCall } from "../integration/broker-harness.js";
import { testAppConfig } from "../support/app-config.js";

const TOKEN = `host-${randomBytes(16).toString("hex")}`;
const ALICE = "UALICE";
const BOB = "UBOB";
const CAROL = "UCAROL";
const GENERAL = "C_GENERAL";

let dir: string;
let app: RunningApp;
let local: LocalWorkspace;
const clients: Client[] = [];

async function boot(log = memoryLogger("warn")): Promise<RunningApp> {
  // NODE_ENV=development and no SLACK_* variables: what `npm start` does on a laptop.
  const config = testAppConfig(dir, TOKEN, { NODE_ENV: "development", SLAUDE_APPROVAL_TIMEOUT_SECONDS: "60" });
  return startApp({ config, log, registry: parseRegistry(fixtureRegistryDoc(), "test") });
}

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-local-"));
  app = await boot();
  expect(app.workspace.kind).toBe("local");
  local = app.workspace.local!;
});

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => {});
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The host's report that it is `user`'s turn in `thread`. */
async function turn(thread: ThreadRef, user: string): Promise<void> {
  const r = await fetch(`${app.url}/v1/turns`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      team_id: thread.teamId,
      channel_id: thread.channelId,
      thread_ts: thread.threadTs,
      user_id: user,
    }),
  });
  expect(r.status).toBe(204);
}

/** An agent host's MCP session on the broker's /mcp for one thread. */
async function session(thread: ThreadRef): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
    requestInit: {
      headers: {
        Authorization: `Bearer ${TOKEN}`,
        "X-Slaude-Thread": `${thread.teamId}/${thread.channelId}/${thread.threadTs}`,
      },
    },
  });
  const client = new Client({ name: "local-workspace-test", version: "1" });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function connectVendor(owner: string, thread: ThreadRef, opts: { ttlMs?: number } = {}) {
  return app.lifecycle.create({
    teamId: thread.teamId,
    ownerUserId: owner,
    service: "vendor",
    scope: "thread",
    channelId: thread.channelId,
    threadTs: thread.threadTs,
    credential: { kind: "fields", fields: { token: `canary-${randomBytes(8).toString("hex")}`, user: owner } },
    createdBy: owner,
    ...(opts.ttlMs ? { ttlMs: opts.ttlMs } : {}),
  });
}

async function waitForCard(user: string, pick: (i: InboxItem) => boolean): Promise<InboxItem> {
  return vi.waitFor(
    async () => {
      const item = (await local.inbox(user)).find(pick);
      if (!item) throw new Error(`no such card in ${user}'s inbox yet`);
      return item;
    },
    { timeout: 30_000, interval: 50 },
  );
}

describe("local workspace", () => {
  it("seeds the demo team: Alice, Bob and Carol (an admin) in #general", async () => {
    expect(await local.users()).toEqual([
      { id: ALICE, name: "Alice", admin: false },
      { id: BOB, name: "Bob", admin: false },
      { id: CAROL, name: "Carol", admin: true },
    ]);
    expect(await local.channels()).toEqual([{ id: GENERAL, name: "general", members: [ALICE, BOB, CAROL] }]);
    expect(local.teamId).toBe("T_LOCAL");
  });

  it("membership comes from the members table: a removal refuses the very next call, an addition allows it", async () => {
    const thread = await local.startThread(GENERAL, BOB);
    await connectVendor(BOB, thread);
    const client = await session(thread);
    await turn(thread, BOB);
    const first = await mcpCall(client, { tool: "read_item", args: { id: "1" }, on_behalf_of: BOB });
    expect(first.structured.status).toBe("ok");

    await local.setMember(GENERAL, BOB, false);
    expect((await local.channels())[0]?.members).toEqual([ALICE, CAROL]);
    const removed = await mcpCall(client, { tool: "read_item", args: { id: "2" }, on_behalf_of: BOB });
    expect(removed.structured.code).toBe("not_member");

    await local.setMember(GENERAL, BOB, true);
    const back = await mcpCall(client, { tool: "read_item", args: { id: "3" }, on_behalf_of: BOB });
    expect(back.structured.status).toBe("ok");
    // A non-member cannot start a thread either.
    await local.setMember(GENERAL, CAROL, false);
    await expect(local.startThread(GENERAL, CAROL)).rejects.toMatchObject({ code: "not_member" });
  });

  it("a borrow asks the owner through her inbox; Bob's answer is refused not_owner (audited), Alice's applies", async () => {
    const thread = await local.startThread(GENERAL, ALICE);
    await connectVendor(ALICE, thread);
    const client = await session(thread);
    await turn(thread, BOB);
    const pending = mcpCall(client, { tool: "read_item", args: { id: "note-7" }, on_behalf_of: BOB });

    const card = await waitForCard(ALICE, (i) => i.card.kind === "approval" && i.state === "open");
    expect(card.approvalId).toBeTruthy();
    const facts = cardFactList(card.card);
    expect(facts.args).toEqual([["id", "note-7"]]);
    expect(facts.actions).toEqual(["Allow for thread", "Just once", "Deny"]);
    expect(facts.title).toBe(`@${BOB} wants to use your vendor account (read_item).`);
    // Nothing lands in Bob's inbox; the thread says Alice was asked, by name.
    expect(await local.inbox(BOB)).toEqual([]);
    await vi.waitFor(
      async () =>
        expect((await local.notes(thread)).map((n) => n.text)).toEqual([
          expect.stringMatching(/^@Bob: this needs @Alice's vendor account/),
        ]),
      { timeout: 10_000 },
    );

    expect(await local.decide(card.approvalId!, "allowed_thread", BOB)).toBe("not_owner");
    const rejected = await app.store.audit.query({ event: "approval_rejected_click" });
    expect(rejected).toEqual([
      expect.objectContaining({ approverUserId: BOB, decision: "not_owner", ownerUserId: ALICE, teamId: "T_LOCAL" }),
    ]);

    expect(await local.decide(card.approvalId!, "allowed_once", ALICE)).toBe("applied");
    const result = await pending;
    expect(result.structured.status).toBe("ok");
    expect(result.text).toContain(`"ranAs":"${ALICE}"`);
    const decided = await app.store.audit.query({ event: "approval_decided" });
    expect(decided.some((r) => r.decision === "allowed_once" && r.approverUserId === ALICE)).toBe(true);
    // The card settled in place: no buttons, no arguments left in the store.
    const settled = await waitForCard(ALICE, (i) => i.id === card.id && i.state === "settled");
    expect(settled.card.kind).toBe("approval_settled");
    expect(settled.card.actions).toEqual([]);
    expect(JSON.stringify(settled.card)).not.toContain("note-7");
    expect(await local.decide(card.approvalId!, "allowed_once", ALICE)).toBe("already_decided");
  });

  it("an owner who is not in the workspace cannot be asked: the card is not delivered, so the borrow is refused", async () => {
    const channel = new LocalApprovalChannel(local as LocalWorkspaceService, memoryLogger("warn"), 60_000);
    const thread = await local.startThread(GENERAL, BOB);
    const approval = {
      id: "appr_x",
      nonce: "n",
      connectionId: "c",
      ...thread,
      ownerUserId: "UGHOST",
      borrowerUserId: BOB,
      service: "vendor",
      tool: "read_item",
      argsHash: "h",
      status: "pending" as const,
      createdAt: 0,
      expiresAt: 1,
      decidedAt: null,
      decidedBy: null,
      cardChannel: null,
      cardTs: null,
    };
    const model = {
      borrowerUserId: BOB,
      ownerUserId: "UGHOST",
      service: "vendor",
      serviceDisplayName: "vendor",
      tool: "read_item",
      write: false,
      reason: "no_grant" as const,
      keyArgs: [],
      args: { shown: "complete" as const, args: [], chars: 0 },
      decisions: ["denied" as const],
      ...thread,
      expiresAt: 1,
    };
    // ApprovalService turns a throwing ask() into `unavailable` (fail closed).
    await expect(channel.ask(approval, model)).rejects.toMatchObject({ code: "unknown_user" });
    expect(await local.notes(thread)).toEqual([]);
  });

  it("connect puts a consent card in the caller's own inbox; only its user's Continue mints a working login link", async () => {
    const thread = await local.startThread(GENERAL, CAROL);
    const client = await session(thread);
    await turn(thread, CAROL);
    const connect = await client.callTool({ name: "connect", arguments: { service: "vendor" } });
    expect((connect.structuredContent as { status: string }).status).toBe("consent_sent");
    const consent = await waitForCard(CAROL, (i) => i.card.kind === "consent");
    expect(cardFactList(consent.card).actions).toEqual(["Continue"]);
    expect(await local.inbox(ALICE)).toEqual([]);

    expect(await local.continueConsent(consent.id, BOB)).toEqual({ refused: "not_yours" });
    expect(await app.store.audit.query({ event: "login_refused" })).toEqual([
      expect.objectContaining({ callerUserId: BOB, decision: "consent_not_yours" }),
    ]);

    const minted = await local.continueConsent(consent.id, CAROL);
    if (!("url" in minted)) throw new Error(`not minted: ${minted.refused}`);
    const updated = await waitForCard(CAROL, (i) => i.id === consent.id && i.card.actions[0]?.id === "open_login");
    expect(updated.card.actions[0]?.url).toBe(minted.url);
    // The link is the live-view login page for Carol's vendor login, and it works once.
    const page = await fetch(`${app.url}${new URL(minted.url).pathname}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("vendor");
    const sessions = await app.store.audit.query({ event: "login_started" });
    expect(
      sessions.some((r) => r.callerUserId === CAROL && r.service === "vendor" && r.threadTs === thread.threadTs),
    ).toBe(true);
    const again = await fetch(`${app.url}${new URL(minted.url).pathname}`);
    expect(again.status).toBe(410);
  });

  it("owner notices land in the owner's inbox: revoked by an admin (named), expired; not when she revoked it herself", async () => {
    const thread = await local.startThread(GENERAL, ALICE);
    const a = await connectVendor(ALICE, thread);
    await app.lifecycle.revoke(a.id, `admin:${CAROL}`, "revoked by admin");
    const revoked = await waitForCard(ALICE, (i) => i.card.kind === "revoked");
    expect(cardFactList(revoked.card).lines[0]).toBe(
      `An admin (@${CAROL}) revoked your vendor connection. Its credential was wiped and its grants revoked. Connect again with /connect vendor if you still need it.`,
    );

    const b = await connectVendor(ALICE, thread);
    await app.lifecycle.revoke(b.id, ALICE, "revoked by owner");
    await connectVendor(ALICE, thread, { ttlMs: 1 });
    await vi.waitFor(async () => expect(await app.lifecycle.reapExpired()).toBe(1), { timeout: 10_000 });
    await waitForCard(ALICE, (i) => i.card.kind === "expired");
    expect((await local.inbox(ALICE)).map((i) => i.card.kind)).toEqual(["expired", "revoked"]);
  });

  it("every change is pushed to subscribers, and the number of subscribers is capped", async () => {
    const seen: string[] = [];
    const off = local.subscribe((e) => seen.push(e.type));
    await local.setMember(GENERAL, BOB, false);
    await local.startThread(GENERAL, ALICE);
    expect(seen).toEqual(["workspace", "workspace"]);
    off();
    await local.setMember(GENERAL, BOB, true);
    expect(seen).toHaveLength(2);
    const offs: (() => void)[] = [];
    expect(() => {
      for (let i = 0; i < 1_000; i++) offs.push(local.subscribe(() => {}));
    }).toThrow(/at most \d+ watchers/);
    expect(offs.length).toBeLessThan(1_000);
    for (const o of offs) o();
  });
});
