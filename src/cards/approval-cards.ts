import { type ApprovalCard, type ApprovalDecision, CARD_LIMITS } from "../approvals/card.js";
import type { ApprovalOutcome } from "../approvals/channel.js";
import type { Card, CardAction, CardLine, CardSpan } from "../domain/card.js";
import type { Approval } from "../store/records.js";

// The approval card and its settled form, built from the real call (never from model text).

const t = (text: string): CardSpan => ({ kind: "text", text });
const strong = (text: string): CardSpan => ({ kind: "strong", text });
const code = (text: string): CardSpan => ({ kind: "code", text });
const user = (userId: string): CardSpan => ({ kind: "user", userId });

/** A count as every card writes it (1,234). */
export function countText(n: number): string {
  return n.toLocaleString("en-US");
}

/** The button label of each answer, the same on every renderer. */
export const DECISION_LABELS: Readonly<Record<ApprovalDecision, string>> = {
  allowed_thread: "Allow for thread",
  allowed_once: "Just once",
  denied: "Deny",
};

/** Why the card offers only Deny, or undefined when it offers every answer its tool allows. */
function denyOnlyNotice(card: ApprovalCard): CardLine | undefined {
  switch (card.args.shown) {
    case "complete":
      return undefined;
    case "redacted":
      return [
        strong(`An argument contains your ${card.serviceDisplayName} credential.`),
        t(" It is hidden here, so this card cannot show you exactly what would run: only Deny is offered."),
      ];
    case "too_large":
      return [
        strong("These arguments are too large to show in full"),
        t(
          ` (${countText(card.args.count)} arguments, ${countText(card.args.chars)} characters; a card shows at most ${CARD_LIMITS.maxArgs} arguments and ${countText(CARD_LIMITS.maxChars)} characters), so they cannot be approved: only Deny is offered.`,
        ),
      ];
  }
}

function decisionActions(decisions: readonly ApprovalDecision[]): CardAction[] {
  // The first Allow is the primary action; Deny is always there and always red.
  const primary = decisions.find((d) => d !== "denied");
  return decisions.map((d) => ({
    id: d,
    label: DECISION_LABELS[d],
    ...(d === "denied" ? { style: "danger" as const } : d === primary ? { style: "primary" as const } : {}),
  }));
}

/** The card an owner is asked with: who wants what on which account, every argument, the answers offered. */
export function approvalCard(card: ApprovalCard): Card {
  const thread = { teamId: card.teamId, channelId: card.channelId, threadTs: card.threadTs };
  const why: CardLine =
    card.reason === "write_under_grant"
      ? [t("This tool "), strong("changes data"), t(", so every use asks you, even with a thread grant.")]
      : [t("They have no grant in this thread yet.")];
  const notice = denyOnlyNotice(card);
  return {
    kind: "approval",
    title: [user(card.borrowerUserId), t(` wants to use your ${card.serviceDisplayName} account (${card.tool}).`)],
    lines: [
      [
        user(card.borrowerUserId),
        t(" wants to use "),
        strong(`your ${card.serviceDisplayName} account`),
        t(" in "),
        { kind: "thread", thread, text: "the thread" },
        t("."),
      ],
      why,
    ],
    tool: { name: card.tool, write: card.write },
    args: card.args,
    ...(notice ? { notice } : {}),
    footer: [
      t("Expires "),
      { kind: "date", at: card.expiresAt },
      t(". Every use is audited; you can revoke any time with "),
      { kind: "howto", howto: "revoke", service: card.service },
      t("."),
    ],
    actions: decisionActions(card.decisions),
  };
}

const OUTCOME_TITLE: Record<ApprovalOutcome, string> = {
  allowed_thread: "Request allowed for this thread",
  allowed_once: "Request allowed once",
  denied: "Request denied",
  expired: "Request expired",
};

const OUTCOME_TEXT: Record<ApprovalOutcome, string> = {
  allowed_thread: "allowed for this thread",
  allowed_once: "allowed once",
  denied: "denied",
  expired: "expired without an answer",
};

/** The approval card after it settled: the same request, its outcome, no buttons. */
export function approvalSettledCard(a: Approval, outcome: ApprovalOutcome): Card {
  return {
    kind: "approval_settled",
    title: [t(OUTCOME_TITLE[outcome])],
    lines: [
      [
        user(a.borrowerUserId),
        t("'s request to run "),
        code(a.tool),
        t(" on your "),
        strong(a.service),
        t(" account: "),
        strong(OUTCOME_TEXT[outcome]),
        t("."),
      ],
    ],
    footer: [
      t("Asked "),
      { kind: "date", at: a.createdAt },
      t(" in "),
      {
        kind: "thread",
        thread: { teamId: a.teamId, channelId: a.channelId, threadTs: a.threadTs },
        text: "the thread",
      },
      t("."),
    ],
    actions: [],
  };
}

function waitText(ms: number): string {
  return ms < 120_000 ? `${Math.max(1, Math.round(ms / 1000))} seconds` : `${Math.round(ms / 60_000)} minutes`;
}

/** The note in the thread telling the borrower what happened to their request. */
export function approvalThreadNote(a: Approval, outcome: ApprovalOutcome | "asked", timeoutMs?: number): CardLine {
  switch (outcome) {
    case "asked":
      return [
        user(a.borrowerUserId),
        t(": this needs "),
        user(a.ownerUserId),
        t(`'s ${a.service} account. I've asked them to approve `),
        code(a.tool),
        t(`; I'll wait up to ${waitText(timeoutMs ?? 0)}.`),
      ];
    case "allowed_thread":
      return [
        user(a.ownerUserId),
        t(" allowed "),
        user(a.borrowerUserId),
        t(` to use their ${a.service} account in this thread.`),
      ];
    case "allowed_once":
      return [user(a.ownerUserId), t(" allowed "), code(a.tool), t(" once.")];
    case "denied":
      return [user(a.ownerUserId), t(` declined the request to use their ${a.service} account.`)];
    case "expired":
      return [user(a.ownerUserId), t(" didn't answer in time, so "), code(a.tool), t(" did not run.")];
  }
}
