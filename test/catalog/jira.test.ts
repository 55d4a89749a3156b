import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callHash } from "../../src/policy/args-hash.js";
import { type FakeJira, startFakeJira } from "../fixtures/fake-jira-api.js";
import { ALICE, BOB, type Harness, makeHarness, mcpCall, THREAD } from "../integration/broker-harness.js";

// The catalog's Jira entry through the real broker: the pinned @aaronsb/jira-cloud-mcp child runs
// with Alice's email and API token against a fake Jira Cloud API on loopback. Bob, in Alice's
// thread, borrows her connection: his first read asks her and she allows the thread; the JQL search
// and the comment are writes (their tools also edit), each asked about and allowed just once, bound
// to those exact arguments, so a second, different comment is asked about anew and, denied, never
// reaches Jira.

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const PKG = path.join(ROOT, "node_modules/@aaronsb/jira-cloud-mcp");
const BIN = path.join(
  PKG,
  (JSON.parse(readFileSync(path.join(PKG, "package.json"), "utf8")) as { bin: Record<string, string> }).bin[
    "jira-cloud-mcp"
  ]!,
);
const catalog = JSON.parse(readFileSync(path.join(ROOT, "services.example.json"), "utf8")) as {
  services: { jira: { transport: Record<string, unknown> } };
};

const ALICE_EMAIL = "alice@example.com";
const ALICE_TOKEN = `ATATT-alice-${randomBytes(12).toString("hex")}`;
const BOB_EMAIL = "bob@example.com";
const BOB_TOKEN = `ATATT-bob-${randomBytes(12).toString("hex")}`;

let jira: FakeJira;
let h: Harness;

beforeAll(async () => {
  jira = await startFakeJira({
    [ALICE_EMAIL]: { token: ALICE_TOKEN, accountId: "acc-alice", displayName: "Alice Jira" },
    [BOB_EMAIL]: { token: BOB_TOKEN, accountId: "acc-bob", displayName: "Bob Jira" },
  });
  // The catalog entry as shipped; only the executable (the installed bin, by path) and the site differ.
  const entry = structuredClone(catalog.services.jira);
  entry.transport = { ...entry.transport, command: process.execPath, args: [BIN], env: { JIRA_HOST: jira.host } };
  h = await makeHarness({ registryDoc: { services: { jira: entry } }, callTimeoutMs: 60_000 });
  await h.lifecycle.create({
    teamId: THREAD.teamId,
    ownerUserId: ALICE,
    service: "jira",
    scope: "thread",
    channelId: THREAD.channelId,
    threadTs: THREAD.threadTs,
    credential: { kind: "fields", fields: { email: ALICE_EMAIL, token: ALICE_TOKEN } },
    createdBy: ALICE,
  });
}, 60_000);

afterAll(async () => {
  await h?.close();
  await jira?.close();
});

describe("Jira Cloud through the broker", () => {
  it("Bob borrows Alice's Jira in her thread: reads on a thread grant, a search and a comment just once", async () => {
    const s = await h.session();
    s.turn.user = BOB;

    // A read: Alice allows it for the thread, and the grant covers Bob's next reads here.
    const countArgs = { jql: 'project = DEMO AND text ~ "login"', metrics: ["distribution"] };
    const count = mcpCall(s.client, {
      service: "jira",
      tool: "analyze_jira_issues",
      args: countArgs,
      on_behalf_of: BOB,
    });
    const c0 = await h.approvals.nextCard(0);
    expect(c0.approval).toMatchObject({ ownerUserId: ALICE, borrowerUserId: BOB, tool: "analyze_jira_issues" });
    expect(await h.approvalService.decide(c0.approval.id, c0.approval.nonce, ALICE, "allowed_thread")).toBe("applied");
    const counted = await count;
    expect(counted.structured.status, counted.text).toBe("ok");
    expect(counted.structured.ranAs).toBe("approval_thread");
    expect(counted.text).toContain("Analyzed 1 issues");

    // The JQL search itself is manage_jira_filter, which also edits saved filters: a write, asked about each time.
    const searchArgs = { operation: "execute_jql", jql: 'project = DEMO AND text ~ "login"' };
    const search = mcpCall(s.client, {
      service: "jira",
      tool: "manage_jira_filter",
      args: searchArgs,
      on_behalf_of: BOB,
    });
    const c1 = await h.approvals.nextCard(1);
    expect(c1.card.reason).toBe("write_under_grant");
    expect(await h.approvalService.decide(c1.approval.id, c1.approval.nonce, ALICE, "allowed_once")).toBe("applied");
    const found = await search;
    expect(found.structured.status, found.text).toBe("ok");
    expect(found.structured.ranAs).toBe("approval_once");
    expect(found.text).toContain("DEMO-1");
    expect(found.text).toContain("Login fails on Safari");
    expect(found.text).not.toContain("DEMO-2");

    // A comment is a write: the thread grant does not cover it, Alice is asked about these arguments.
    const commentArgs = { operation: "comment", issueKey: "DEMO-1", comment: "Seen on Safari 18 as well." };
    const comment = mcpCall(s.client, {
      service: "jira",
      tool: "manage_jira_issue",
      args: commentArgs,
      on_behalf_of: BOB,
    });
    const c2 = await h.approvals.nextCard(2);
    expect(c2.card.reason).toBe("write_under_grant");
    expect(c2.approval.argsHash).toBe(callHash("jira", "manage_jira_issue", commentArgs));
    expect(await h.approvalService.decide(c2.approval.id, c2.approval.nonce, ALICE, "allowed_once")).toBe("applied");
    const posted = await comment;
    expect(posted.structured.status, posted.text).toBe("ok");
    expect(posted.structured.ranAs).toBe("approval_once");
    expect(jira.comments).toEqual([{ issueKey: "DEMO-1", accountId: "acc-alice", text: "Seen on Safari 18 as well." }]);
    // Just once: the approval is spent, and it never covered other arguments.
    expect(await h.approvalService.consume(c2.approval, c2.approval.argsHash)).toBe(false);

    const otherArgs = { ...commentArgs, comment: "And on Firefox." };
    const other = mcpCall(s.client, { service: "jira", tool: "manage_jira_issue", args: otherArgs, on_behalf_of: BOB });
    const c3 = await h.approvals.nextCard(3);
    expect(c3.approval.id).not.toBe(c2.approval.id);
    expect(c3.approval.argsHash).toBe(callHash("jira", "manage_jira_issue", otherArgs));
    expect(await h.approvalService.decide(c3.approval.id, c3.approval.nonce, ALICE, "denied")).toBe("applied");
    const refused = await other;
    expect(refused.structured.status).not.toBe("ok");
    expect(jira.comments).toHaveLength(1);

    // Every request Jira saw carried Alice's credential: never Bob's account, never an unknown one.
    expect(jira.requests.length).toBeGreaterThan(0);
    expect(new Set(jira.requests.map((r) => r.accountId))).toEqual(new Set(["acc-alice"]));
    expect(
      jira.requests.filter((r) => r.method === "POST" && r.path === "/rest/api/3/issue/DEMO-1/comment"),
    ).toHaveLength(1);
    // The audit names the route and the approver, never the token.
    const calls = await h.store.audit.query({ event: "call", service: "jira" });
    expect(calls.map((c) => [c.tool, c.decision, c.callerUserId, c.ownerUserId, c.approverUserId])).toEqual([
      ["analyze_jira_issues", "approval_thread", BOB, ALICE, ALICE],
      ["manage_jira_filter", "approval_once", BOB, ALICE, ALICE],
      ["manage_jira_issue", "approval_once", BOB, ALICE, ALICE],
    ]);
    const everything = JSON.stringify(await h.store.audit.query({ limit: 10_000 })) + h.log.lines.join("\n");
    expect(everything).not.toContain(ALICE_TOKEN);
    await s.close();
  }, 120_000);
});
