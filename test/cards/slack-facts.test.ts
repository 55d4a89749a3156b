import { describe, expect, it } from "vitest";
import { type ApprovalCard, cardFacts as approvalArgFacts } from "../../src/approvals/card.js";
import { approvalCard, approvalSettledCard } from "../../src/cards/approval-cards.js";
import {
  connectionReadyCard,
  consentCard,
  expiredCard,
  needsLoginCard,
  revokedCard,
} from "../../src/cards/notice-cards.js";
import { parseRegistry } from "../../src/config/registry.js";
import { type Card, cardFactList } from "../../src/domain/card.js";
import { Redactor } from "../../src/hygiene/redact.js";
import { approvalCardBlocks } from "../../src/slack/approval-blocks.js";
import { approvalSettledBlocks, consentBlocks } from "../../src/slack/blocks.js";
import { noticeText, notificationText } from "../../src/slack/card-mrkdwn.js";
import type { Approval, Connection } from "../../src/store/records.js";
import { argumentsShown } from "../fixtures/slack/block-text.js";

// One card model, Slack's renderer: everything the card says (cardFactList) is what Slack shows,
// nothing is lost or added by the renderer. The console's HTML half of this comparison is in the
// console's browser test (it renders the same Card JSON).

type Node = Record<string, unknown>;

/** What a person reads in Slack: mrkdwn with mentions, links and dates as they appear, formatting marks dropped. */
function readMrkdwn(s: string): string {
  return s
    .replace(/<@([A-Z0-9_]+)>/g, "@$1")
    .replace(/<#([A-Z0-9_]+)>/g, "#$1")
    .replace(/<!date\^\d+\^[^|>]*\|([^>]*)>/g, "$1")
    .replace(/<[^|>]+\|([^>]*)>/g, "$1")
    .replace(/[*`]/g, "")
    .replace(/^:warning: /, "")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}

/** Every text a person sees on a message: its notification text and each block's texts. */
function slackTexts(v: unknown, out: string[] = []): string[] {
  if (Array.isArray(v)) for (const x of v) slackTexts(x, out);
  else if (v && typeof v === "object") {
    const n = v as Node;
    if (n.type === "mrkdwn" && typeof n.text === "string")
      out.push(...n.text.split("\n").map((l) => readMrkdwn(l.replace(/^• /, ""))));
    else if ((n.type === "plain_text" || n.type === "text") && typeof n.text === "string") out.push(n.text);
    for (const x of Object.values(n)) slackTexts(x, out);
  }
  return out;
}

function buttonLabels(blocks: unknown[]): string[] {
  return (blocks as Node[])
    .filter((b) => b.type === "actions")
    .flatMap((b) => (b.elements as Node[]).map((e) => String((e.text as Node).text)));
}

/** Asserts Slack shows every fact of `card`: the title (as notification text), each line, argument, notice, footer and button. */
function expectSlackShows(card: Card, message: { text: string; blocks?: unknown[] }): void {
  const facts = cardFactList(card);
  const texts = [readMrkdwn(message.text), ...slackTexts(message.blocks ?? [])];
  const all = texts.join("\n");
  expect(readMrkdwn(notificationText(card))).toBe(readMrkdwn(message.text));
  expect(texts).toContain(facts.title);
  for (const l of facts.lines) expect(all).toContain(l);
  if (facts.notice) expect(all).toContain(facts.notice);
  if (facts.footer) expect(all).toContain(facts.footer);
  if (facts.tool) expect(all).toContain(facts.tool);
  if (message.blocks) {
    expect(buttonLabels(message.blocks)).toEqual(facts.actions);
    const shown = argumentsShown(message.blocks);
    expect([...shown.entries()]).toEqual(facts.args.map(([k, v]) => [k, v]));
  } else expect(facts.actions).toEqual([]);
}

const registry = parseRegistry(
  {
    services: {
      demo: {
        displayName: "Demo notes",
        transport: { type: "stdio", command: "node", args: ["x"], credentialEnv: { T: "{{token}}" } },
        capture: { strategy: "paste", fields: [{ name: "token", label: "Token" }] },
        scopes: ["thread", "user"],
        tools: { list_notes: ["borrowable", "read"] },
      },
    },
  },
  "test",
);
const demo = registry.get("demo")!;
const approval: Approval = {
  id: "appr_1",
  nonce: "n",
  connectionId: "conn_1",
  teamId: "T_LOCAL",
  channelId: "C_GENERAL",
  threadTs: "1.000001",
  ownerUserId: "U_ALICE",
  borrowerUserId: "U_BOB",
  service: "demo",
  tool: "add_note",
  argsHash: "h",
  status: "pending",
  createdAt: 1_700_000_000_000,
  expiresAt: 1_700_000_120_000,
  decidedAt: null,
  decidedBy: null,
  cardChannel: null,
  cardTs: null,
};
const conn: Connection = {
  id: "conn_1",
  teamId: "T_LOCAL",
  ownerUserId: "U_ALICE",
  service: "demo",
  scope: "thread",
  channelId: "C_GENERAL",
  threadTs: "1.000001",
  status: "active",
  sealed: null,
  label: null,
  createdBy: "U_ALICE",
  createdAt: 0,
  updatedAt: 0,
  expiresAt: 8 * 3_600_000,
  endedAt: null,
  endedReason: null,
};

function model(args: Record<string, unknown>, write: boolean, redactor = new Redactor([])): ApprovalCard {
  return {
    borrowerUserId: "U_BOB",
    ownerUserId: "U_ALICE",
    service: "demo",
    serviceDisplayName: "Demo notes",
    tool: "add_note",
    write,
    reason: write ? "write_under_grant" : "no_grant",
    ...approvalArgFacts(args, redactor, write),
    teamId: "T_LOCAL",
    channelId: "C_GENERAL",
    threadTs: "1.000001",
    expiresAt: approval.expiresAt,
  };
}

describe("Slack renders every card from the card model, showing exactly its facts", () => {
  it("approval card: title, lines, tool, every argument name and value exactly, the offered buttons", () => {
    const m = model({ title: "Groceries <b>&", body: "milk\n*eggs*", count: 2, tags: ["a", "b"] }, false);
    const card = approvalCard(m);
    expect(cardFactList(card).args).toEqual([
      ["title", "Groceries <b>&"],
      ["body", "milk\n*eggs*"],
      ["count", "2"],
      ["tags", JSON.stringify(["a", "b"], null, 2)],
    ]);
    expect(cardFactList(card).actions).toEqual(["Allow for thread", "Just once", "Deny"]);
    expectSlackShows(card, { text: notificationText(card), blocks: approvalCardBlocks(approval, m) });
  });

  it("a write's card offers Just once and Deny; a card with the owner's credential in it offers only Deny and says why", () => {
    const write = approvalCard(model({ text: "hi" }, true));
    expect(cardFactList(write).actions).toEqual(["Just once", "Deny"]);
    expectSlackShows(write, {
      text: notificationText(write),
      blocks: approvalCardBlocks(approval, model({ text: "hi" }, true)),
    });
    const redactedModel = model({ token: "canary-secret-value-42" }, false, new Redactor(["canary-secret-value-42"]));
    const redacted = approvalCard(redactedModel);
    expect(cardFactList(redacted).actions).toEqual(["Deny"]);
    expect(cardFactList(redacted).notice).toMatch(/contains your Demo notes credential/);
    expect(JSON.stringify(redacted)).not.toContain("canary-secret-value-42");
    expectSlackShows(redacted, {
      text: notificationText(redacted),
      blocks: approvalCardBlocks(approval, redactedModel),
    });
  });

  it("settled approval card: the outcome and the request id, no buttons", () => {
    for (const outcome of ["allowed_thread", "allowed_once", "denied", "expired"] as const) {
      const card = approvalSettledCard(approval, outcome);
      expectSlackShows(card, { text: notificationText(card), blocks: approvalSettledBlocks(approval, outcome) });
    }
  });

  it("consent card: what is captured, storage, scope, expiry and the next step (Continue, the link, or unavailable)", () => {
    const steps = [
      [{ kind: "continue" }, { loginAvailable: true, acceptValue: "v" }, ["Continue"]],
      [
        { kind: "link", url: "http://127.0.0.1:1/login/l/abc" },
        { loginAvailable: true, loginUrl: "http://127.0.0.1:1/login/l/abc" },
        ["Open private sign-in page"],
      ],
      [{ kind: "unavailable" }, { loginAvailable: false }, []],
    ] as const;
    for (const [step, opts, labels] of steps) {
      const card = consentCard(demo, step);
      expect(cardFactList(card).actions).toEqual(labels);
      expect(cardFactList(card).lines[0]).toBe("What is captured: an API token you paste into a private page (Token)");
      expectSlackShows(card, { text: notificationText(card), blocks: consentBlocks(demo, opts) });
    }
  });

  it("owner notices (ready, needs login, revoked by an admin or not, expired) say in Slack exactly what the card says", () => {
    for (const card of [
      connectionReadyCard(conn, demo),
      needsLoginCard(conn),
      revokedCard(conn, "U_CAROL"),
      revokedCard(conn),
      expiredCard(conn),
    ]) {
      const facts = cardFactList(card);
      expect(facts.lines.length).toBe(1);
      expect(readMrkdwn(noticeText(card))).toBe(facts.lines[0]);
      expect(facts.actions).toEqual([]);
    }
    expect(cardFactList(revokedCard(conn, "U_CAROL")).lines[0]).toBe(
      "An admin (@U_CAROL) revoked your demo connection. Its credential was wiped and its grants revoked. Connect again with /connect demo if you still need it.",
    );
  });
});
