import { describe, expect, it } from "vitest";
import { type ApprovalCard, CARD_LIMITS, cardFacts } from "../../src/approvals/card.js";
import { Redactor } from "../../src/hygiene/redact.js";
import { approvalArgsView, approvalCardBlocks } from "../../src/slack/approval-blocks.js";
import type { Approval } from "../../src/store/records.js";
import { argumentsShown, formattedTexts } from "../fixtures/slack/block-text.js";
import { validBlock } from "../fixtures/slack/fake-slack-views.js";

// The Block Kit renderer of the card model: values only ever inside rich_text `text` elements (which
// Slack does not parse as mrkdwn), every argument recoverable exactly from the modal, within Slack's limits.

const approval: Approval = {
  id: "appr_test0001",
  nonce: "nonce-0001",
  connectionId: "conn_test0001",
  teamId: "T0FAKETEAM",
  channelId: "C0THREAD1",
  threadTs: "1700000000.000100",
  ownerUserId: "UALICE01",
  borrowerUserId: "UBOB0002",
  service: "vendor",
  tool: "write_item",
  argsHash: "0".repeat(64),
  status: "pending",
  createdAt: 0,
  expiresAt: 120_000,
  decidedAt: null,
  decidedBy: null,
  cardChannel: null,
  cardTs: null,
};

function card(args: Record<string, unknown>, write = true): ApprovalCard {
  return {
    borrowerUserId: approval.borrowerUserId,
    ownerUserId: approval.ownerUserId,
    service: "vendor",
    serviceDisplayName: "Vendor",
    tool: approval.tool,
    write,
    reason: "no_grant",
    ...cardFacts(args, new Redactor([]), write),
    teamId: approval.teamId,
    channelId: approval.channelId,
    threadTs: approval.threadTs,
    expiresAt: approval.expiresAt,
  };
}

const HOSTILE = [
  "<!channel>",
  "<!here|here>",
  "*bold* _it_ ~strike~",
  "```fence```",
  "`tick`",
  "<@UALICE01>",
  "<https://evil.example|click me>",
  "&lt;b&gt;",
  "<#C0THREAD1>",
];

describe("approval card blocks", () => {
  it("hostile mrkdwn in argument values stays inert: only in rich_text text elements, never in a formatted text", () => {
    const args = Object.fromEntries(HOSTILE.map((h, i) => [`v${i}`, h]));
    args["*name*<!channel>"] = "x";
    const c = card(args);
    for (const blocks of [approvalCardBlocks(approval, c), approvalArgsView(approval, c).blocks as unknown[]]) {
      for (const t of formattedTexts(blocks)) for (const h of [...HOSTILE, "*name*"]) expect(t).not.toContain(h);
      const shown = argumentsShown(blocks);
      // Ten arguments: shown inline on the card as well as in the modal.
      expect(Object.fromEntries(shown)).toEqual(args);
      expect(JSON.stringify(blocks)).not.toMatch(/"type":"(broadcast|user|link|channel)"/);
    }
  });

  it("a long value is split into code blocks that join back to it exactly, within Slack's limits", () => {
    const long = `${Array.from({ length: 700 }, (_, i) => `step ${i}; `).join("")}rm -rf /`;
    const view = approvalArgsView(approval, card({ script: long, n: 1 }));
    const blocks = view.blocks as unknown[];
    expect(blocks.every(validBlock)).toBe(true);
    expect(argumentsShown(blocks).get("script")).toBe(long);
    expect(argumentsShown(blocks).get("n")).toBe("1");
  });

  it("the largest card the model allows still fits a Slack modal", () => {
    const args: Record<string, unknown> = {};
    const per = Math.floor(CARD_LIMITS.maxChars / CARD_LIMITS.maxArgs) - 4;
    for (let i = 0; i < CARD_LIMITS.maxArgs; i++) args[`a${String(i).padStart(2, "0")}`] = "y".repeat(per);
    const c = card(args);
    expect(c.args.shown).toBe("complete");
    const view = approvalArgsView(approval, c);
    const blocks = view.blocks as unknown[];
    expect(blocks.length).toBeLessThanOrEqual(100);
    expect(Buffer.byteLength(JSON.stringify(view))).toBeLessThan(250 * 1024);
    expect(blocks.every(validBlock)).toBe(true);
    expect(argumentsShown(blocks).size).toBe(CARD_LIMITS.maxArgs);
    // The message itself stays small and points to the modal.
    const msg = approvalCardBlocks(approval, c);
    expect(msg.length).toBeLessThanOrEqual(50);
    expect(msg.every(validBlock)).toBe(true);
    expect(JSON.stringify(msg)).toContain("View all arguments");
  });

  it("a Deny-only card has only the Deny button and says why", () => {
    const c = card({ v: "x".repeat(CARD_LIMITS.maxChars + 10) });
    const blocks = approvalCardBlocks(approval, c);
    const actions = blocks.flatMap((b) => (b.type === "actions" ? b.elements : []));
    expect(actions.map((e) => e.action_id)).toEqual(["approval_deny"]);
    expect(JSON.stringify(blocks)).toContain("too large to show in full");
    expect(JSON.stringify(blocks)).not.toContain("approval_view_args");
  });
});
