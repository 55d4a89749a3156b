import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { ApprovalService } from "../../src/approvals/approval-service.js";
import { noApprovalChannel } from "../../src/approvals/channel.js";
import type { EmbeddedCaller } from "../../src/broker/broker.js";
import { systemClock } from "../../src/clock/clock.js";
import { demoRegistryDoc } from "../../src/config/demo-registry.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { ALICE, BOB, FakeApprovalChannel, mcpCall, THREAD } from "../integration/broker-harness.js";
import { runBin, runInProcess } from "./run.js";

// `approvals list|decide` against a running broker that holds a borrower's call waiting: the CLI is
// a separate process writing the store, the broker notices the decision and runs (or refuses) the
// call. Only the owner's answer counts, every answer is audited like a click, and an answer the
// card does not offer never runs anything, whichever process wrote it.

let dir: string;
let env: Record<string, string>;
let app: RunningApp;
let channel: FakeApprovalChannel;
const sessions: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-approvals-cli-"));
  const registryPath = path.join(dir, "services.json");
  writeFileSync(registryPath, JSON.stringify(demoRegistryDoc()));
  env = {
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: dir,
    SLAUDE_REGISTRY_PATH: registryPath,
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    SLAUDE_APPROVAL_TIMEOUT_SECONDS: "300",
    PORT: "0",
  };
  channel = new FakeApprovalChannel();
  app = await startApp({
    config: loadConfig({
      ...env,
      SLAUDE_HOST_TOKENS: "host-token-for-approvals-cli-test",
      PATH: process.env.PATH ?? "/usr/bin:/bin",
    }),
    log: memoryLogger(),
    registry: parseRegistry(demoRegistryDoc(), "demo"),
    membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE, BOB),
    approvalChannel: channel,
    approvalPollIntervalMs: 200,
  });
  await app.lifecycle.create({
    teamId: THREAD.teamId,
    ownerUserId: ALICE,
    service: "demo",
    scope: "thread",
    channelId: THREAD.channelId,
    threadTs: THREAD.threadTs,
    credential: { kind: "fields", fields: { token: "demo-alice-q1w2e3r4t5" } },
    createdBy: ALICE,
  });
});

afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close().catch(() => {});
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

async function session(user: string) {
  const turn = { user };
  const s = await app.broker.connectEmbedded((): EmbeddedCaller => ({ ...THREAD, userId: turn.user }));
  sessions.push(s);
  const call = (tool: string, args: Record<string, unknown> = {}) =>
    mcpCall(s.client, { service: "demo", tool, args, on_behalf_of: turn.user });
  return { turn, call };
}

function vendorJson(text: string): Record<string, unknown> {
  const lines = text.split("\n").filter((l) => l.trim().startsWith("{"));
  return JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>;
}

describe("approvals decide from another process", () => {
  it("the owner's answer in the CLI runs the waiting call on the broker; a non-owner's is refused; both are audited", async () => {
    const alice = await session(ALICE);
    await alice.call("add_note", { title: "alice only" });
    const bob = await session(BOB);
    const pending = bob.call("list_notes");
    const { approval } = await channel.nextCard(0);

    const listed = await runInProcess(["approvals", "list", "--owner", ALICE], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(
      new RegExp(
        `^${approval.id}\\s+${THREAD.teamId}\\s+${THREAD.channelId}/${THREAD.threadTs}\\s+${ALICE}\\s+${BOB}\\s+demo\\s+list_notes\\s+pending\\s+\\S+\\s+allow-thread\\|once\\|deny$`,
        "m",
      ),
    );
    expect(listed.stdout).not.toContain(approval.nonce);
    expect((await runInProcess(["approvals", "list", "--owner", BOB], env)).stdout.trim()).toBe("(none)");

    const intruder = await runBin(["approvals", "decide", approval.id, "allow-thread", "--as", BOB], env);
    expect(intruder.code, intruder.stderr).toBe(1);
    expect(intruder.stderr).toContain("not_owner");

    const owner = await runBin(["approvals", "decide", approval.id, "allow-thread", "--as", ALICE], env);
    expect(owner.code, owner.stderr).toBe(0);
    expect(owner.stdout).toContain(`${approval.id}: allow-thread`);

    const r = await pending;
    expect(r.isError, r.text).toBe(false);
    expect(r.structured.ranAs).toBe("approval_thread");
    expect(vendorJson(r.text)).toMatchObject({ account: "alice", notes: [{ title: "alice only" }] });
    // The waiting broker updated the card, as it does after a click.
    expect(channel.settledWith.map((s) => [s.approval.id, s.outcome])).toEqual([[approval.id, "allowed_thread"]]);

    const rejected = await app.store.audit.query({ event: "approval_rejected_click" });
    expect(rejected.map((e) => [e.approverUserId, e.decision])).toEqual([[BOB, "not_owner"]]);
    const decided = await app.store.audit.query({ event: "approval_decided" });
    expect(decided.map((e) => [e.approverUserId, e.decision])).toContainEqual([ALICE, "allowed_thread"]);
    expect((await app.store.grants.list({ borrowerUserId: BOB, liveOnly: true })).length).toBe(1);
  });

  it("a write is never allowed for the thread from the CLI; Just once runs it once", async () => {
    const bob = await session(BOB);
    const pending = bob.call("add_note", { title: "from bob" });
    const { approval, card } = await channel.nextCard(0);
    expect(card.decisions).toEqual(["allowed_once", "denied"]);

    const listed = await runInProcess(["approvals", "list"], env);
    expect(listed.stdout).toMatch(/add_note\s+pending\s+\S+\s+once\|deny$/m);
    const thread = await runInProcess(["approvals", "decide", approval.id, "allow-thread", "--as", ALICE], env);
    expect(thread.code).toBe(1);
    expect(thread.stderr).toContain("not_offered");
    expect((await app.store.approvals.get(approval.id))!.status).toBe("pending");

    const once = await runInProcess(["approvals", "decide", approval.id, "once", "--as", ALICE], env);
    expect(once.code, once.stderr).toBe(0);
    const r = await pending;
    expect(r.isError, r.text).toBe(false);
    expect(vendorJson(r.text)).toMatchObject({ account: "alice", added: { title: "from bob" } });
    const again = await runInProcess(["approvals", "decide", approval.id, "deny", "--as", ALICE], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("already_decided");
    const rejected = await app.store.audit.query({ event: "approval_rejected_click" });
    expect(rejected.map((e) => e.decision).sort()).toEqual(["already_decided", "not_offered"]);
  });

  it("an answer the card did not offer, written by another process, runs nothing and its grant is revoked", async () => {
    const bob = await session(BOB);
    const pending = bob.call("add_note", { title: "sneaky" });
    const { approval } = await channel.nextCard(0);
    // Another process with a different idea of the tool's class: it writes allowed_thread.
    const elsewhere = new ApprovalService({
      store: app.store,
      channel: noApprovalChannel,
      clock: systemClock,
      log: memoryLogger(),
      timeoutMs: 60_000,
    });
    expect(await elsewhere.decide(approval.id, approval.nonce, ALICE, "allowed_thread")).toBe("applied");

    const r = await pending;
    expect(r.structured.code).toBe("approval_denied");
    expect(await app.store.audit.query({ event: "call" })).toHaveLength(0);
    expect(await app.store.grants.list({ borrowerUserId: BOB, liveOnly: true })).toEqual([]);
    const rejected = await app.store.audit.query({ event: "approval_rejected_click" });
    expect(rejected.map((e) => e.decision)).toEqual(["not_offered"]);
    expect(channel.settledWith.map((s) => s.outcome)).toEqual(["denied"]);
  });
});

describe("approvals arguments", () => {
  it("refuses malformed arguments with usage (exit 2) and unknown approvals with exit 1", async () => {
    for (const args of [
      ["approvals"],
      ["approvals", "decide", "appr_x", "maybe", "--as", ALICE],
      ["approvals", "decide", "appr_x", "once"],
      ["approvals", "decide", "nope", "once", "--as", ALICE],
      ["approvals", "list", "--limit", "0"],
      ["approvals", "list", "--bogus"],
    ]) {
      const r = await runInProcess(args, env);
      expect(r.code, args.join(" ")).toBe(2);
    }
    const unknown = await runInProcess(["approvals", "decide", "appr_doesnotexist", "deny", "--as", ALICE], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("unknown");
  });
});
