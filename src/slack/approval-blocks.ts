import type { types } from "@slack/bolt";
import type { ApprovalCard, CardArgument } from "../approvals/card.js";
import { approvalCard, countText as count } from "../cards/approval-cards.js";
import type { Card, CardActionId } from "../domain/card.js";
import type { Approval } from "../store/records.js";
import { ACTIONS, approvalButtonValue } from "./blocks.js";
import { contextBlock, esc, mrkdwnLine } from "./card-mrkdwn.js";
import type { Block, ModalView } from "./slack-api.js";

// Block Kit rendering of the approval card (src/cards/approval-cards.ts, arguments from
// src/approvals/card.ts): what it says and offers comes from the card. Every text that came from
// the call (tool, argument names and values) goes into rich_text `text` elements, which Slack never
// parses as mrkdwn: `<!channel>`, `*bold*`, backticks and links stay inert characters. mrkdwn is
// used only for our own sentences.

/** A card shows its arguments inline up to these sizes; past them the modal shows them. */
const INLINE = { maxArgs: 10, maxChars: 2_500 } as const;
/** Code blocks are split at this many characters (Slack's text limit is 3,000). */
const CHUNK = 2_900;

const text = (t: string, style?: types.RichTextText["style"]): types.RichTextText => ({
  type: "text",
  text: t,
  ...(style ? { style } : {}),
});
const richText = (...elements: types.RichTextBlockElement[]): types.RichTextBlock => ({ type: "rich_text", elements });
const line = (...elements: types.RichTextElement[]): types.RichTextSection => ({ type: "rich_text_section", elements });
const code = (t: string): types.RichTextPreformatted => ({ type: "rich_text_preformatted", elements: [text(t)] });
const mrkdwn = (t: string): types.SectionBlock => ({ type: "section", text: { type: "mrkdwn", text: t } });

// Split on code points so a surrogate pair is never cut in two.
function chunks(s: string): string[] {
  const cps = Array.from(s);
  const out: string[] = [];
  for (let i = 0; i < cps.length; i += CHUNK) out.push(cps.slice(i, i + CHUNK).join(""));
  return out;
}

/** One argument: its name and type on a line, then its value as code blocks (one per chunk). */
function argumentBlocks(a: CardArgument): Block[] {
  const parts = chunks(a.text);
  const notes = [
    a.type,
    ...(a.escaped ? ["escaped"] : []),
    ...(a.redacted ? ["contains your credential, hidden"] : []),
    ...(parts.length > 1 ? [`${count(a.text.length)} characters in ${parts.length} parts`] : []),
  ];
  const label = line(
    a.name === "" ? text("(empty name)", { italic: true }) : text(a.name, { bold: true }),
    text(` (${notes.join(", ")})`),
  );
  if (parts.length === 0) return [richText(label, line(text("(empty)", { italic: true })))];
  return parts.map((p, i) => (i === 0 ? richText(label, code(p)) : richText(code(p))));
}

function toolLine(tool: { name: string; write: boolean }): types.RichTextBlock {
  return richText(
    line(text("Tool: ", { bold: true }), text(tool.name, { code: true }), text(tool.write ? " (write)" : " (read)")),
  );
}

/** The card's warning (why it is Deny-only), or undefined when it has none. */
function noticeBlock(card: Card): types.SectionBlock | undefined {
  return card.notice ? mrkdwn(`:warning: ${mrkdwnLine(card.notice)}`) : undefined;
}

const BUTTON_ACTIONS: Partial<Record<CardActionId, string>> = {
  allowed_thread: ACTIONS.allowThread,
  allowed_once: ACTIONS.allowOnce,
  denied: ACTIONS.deny,
};

function decisionButtons(card: Card, value: string): types.Button[] {
  return card.actions.map((a) => ({
    type: "button",
    action_id: BUTTON_ACTIONS[a.id] ?? a.id,
    text: { type: "plain_text", text: a.label },
    value,
    ...(a.style ? { style: a.style } : {}),
  }));
}

/** The approval card DM'd to an owner: every argument inline when small, else behind View all arguments. */
export function approvalCardBlocks(approval: Approval, model: ApprovalCard): Block[] {
  const card = approvalCard(model);
  const value = approvalButtonValue(approval);
  const blocks: Block[] = [mrkdwn(card.lines.map(mrkdwnLine).join("\n"))];
  if (card.tool) blocks.push(toolLine(card.tool));
  const a = model.args;
  if (a.shown === "too_large") {
    blocks.push(mrkdwn(`*Arguments:* ${count(a.count)}, not shown.`));
  } else if (a.args.length === 0) {
    blocks.push(mrkdwn("*Arguments:* _none_"));
  } else {
    const inline = a.args.length <= INLINE.maxArgs && a.chars <= INLINE.maxChars;
    const summary = inline
      ? `*Arguments:* ${count(a.args.length)}, exactly as they would run:`
      : `*Arguments:* ${count(a.args.length)} (${count(a.chars)} characters), too long for this message. Open *View all arguments* to read every one, exactly as it would run, before you decide.`;
    blocks.push({
      type: "section",
      text: { type: "mrkdwn", text: summary },
      accessory: {
        type: "button",
        action_id: ACTIONS.viewArgs,
        text: { type: "plain_text", text: "View all arguments" },
        value,
      },
    });
    if (inline) for (const arg of a.args) blocks.push(...argumentBlocks(arg));
  }
  const notice = noticeBlock(card);
  if (notice) blocks.push(notice);
  if (card.footer) blocks.push(contextBlock(card.footer));
  blocks.push({ type: "actions", block_id: "approval", elements: decisionButtons(card, value) });
  return blocks;
}

/** The View all arguments modal: every argument of a pending card, values as code, split to fit Slack. */
export function approvalArgsView(approval: Approval, card: ApprovalCard): ModalView {
  const blocks: Block[] = [
    mrkdwn(
      `<@${card.borrowerUserId}> asks to run this on *your ${esc(card.serviceDisplayName)} account*. Every argument, exactly as the vendor would receive it:`,
    ),
    toolLine({ name: card.tool, write: card.write }),
  ];
  const notice = noticeBlock(approvalCard(card));
  if (notice) blocks.push(notice);
  if (card.args.shown !== "too_large") for (const arg of card.args.args) blocks.push(...argumentBlocks(arg));
  blocks.push({
    type: "context",
    elements: [
      {
        type: "mrkdwn",
        text: "Strings are shown verbatim, other values as JSON; _escaped_ values hold invisible characters, written as \\uXXXX. Close this and answer on the card.",
      },
    ],
  });
  return {
    type: "modal",
    callback_id: "approval_arguments",
    private_metadata: approval.id,
    title: { type: "plain_text", text: "Request arguments" },
    close: { type: "plain_text", text: "Close" },
    blocks,
  };
}
