import type { types } from "@slack/bolt";
import type { ApprovalOutcome } from "../approvals/channel.js";
import type { AuditRecord } from "../audit/event.js";
import { approvalSettledCard, approvalThreadNote } from "../cards/approval-cards.js";
import { type ConsentStep, consentCard } from "../cards/notice-cards.js";
import type { Service } from "../config/registry.js";
import type { Card } from "../domain/card.js";
import type { Approval, Connection, Grant, ToolPin } from "../store/records.js";
import { contextBlock, esc, mrkdwnLine, mrkdwnSection, when } from "./card-mrkdwn.js";
import { PIN_ACTIONS, toolChangeBlocks } from "./pin-blocks.js";
import type { Block } from "./slack-api.js";

// Pure Block Kit rendering: every text shown in Slack comes from real records, never from model text.
// Cards (approval, consent, notices) are rendered from the one card model in src/cards.

export { captureDescription } from "../cards/notice-cards.js";
export { esc, when } from "./card-mrkdwn.js";

/** Action ids of every button the app handles. */
export const ACTIONS = {
  allowThread: "approval_allow_thread",
  allowOnce: "approval_allow_once",
  deny: "approval_deny",
  revokeConnection: "revoke_connection",
  revokeGrant: "revoke_grant",
  adminRevoke: "admin_revoke_connection",
  consentAccept: "consent_accept",
  consentOpen: "consent_open",
  viewArgs: "approval_view_args",
  pinAccept: PIN_ACTIONS.accept,
  pinReject: PIN_ACTIONS.reject,
} as const;

/** The value carried by approval buttons: which approval, and its nonce. */
export function approvalButtonValue(a: Approval): string {
  return JSON.stringify({ a: a.id, n: a.nonce });
}

/** The approval card after it settled: same facts, no buttons (rendered from the card model). */
export function approvalSettledBlocks(a: Approval, outcome: ApprovalOutcome): Block[] {
  const card = approvalSettledCard(a, outcome);
  return [mrkdwnSection(card.lines.map(mrkdwnLine).join("\n")), ...(card.footer ? [contextBlock(card.footer)] : [])];
}

/** The note in the thread telling the borrower what happened. */
export function threadNoteText(a: Approval, outcome: ApprovalOutcome | "asked", timeoutMs?: number): string {
  return mrkdwnLine(approvalThreadNote(a, outcome, timeoutMs));
}

/** What the consent card's Continue button carries: who may accept, for which service and thread. */
export function consentValue(v: {
  userId: string;
  service: string;
  channelId: string | null;
  threadTs: string | null;
}): string {
  return JSON.stringify({ u: v.userId, s: v.service, c: v.channelId, t: v.threadTs });
}

/** Block Kit of a consent card: the title in bold, the facts as bullets, the next step. */
export function consentCardBlocks(card: Card, acceptValue?: string): Block[] {
  const blocks: Block[] = [
    mrkdwnSection(`*${mrkdwnLine(card.title)}*`),
    mrkdwnSection(card.lines.map((l) => `• ${mrkdwnLine(l)}`).join("\n")),
  ];
  const elements = card.actions.map(
    (a): types.Button => ({
      type: "button",
      text: { type: "plain_text", text: a.label },
      ...(a.style ? { style: a.style } : {}),
      ...(a.url
        ? { url: a.url, action_id: ACTIONS.consentOpen }
        : { value: acceptValue ?? "", action_id: ACTIONS.consentAccept }),
    }),
  );
  if (elements.length) blocks.push({ type: "actions", elements });
  if (card.footer) blocks.push(contextBlock(card.footer));
  return blocks;
}

/** The consent card for connecting an account. */
export function consentBlocks(
  service: Service,
  opts: { loginAvailable: boolean; loginUrl?: string; inThread?: boolean; acceptValue?: string },
): Block[] {
  const step: ConsentStep =
    opts.loginAvailable && opts.loginUrl
      ? { kind: "link", url: opts.loginUrl }
      : opts.loginAvailable && opts.acceptValue
        ? { kind: "continue" }
        : { kind: "unavailable" };
  return consentCardBlocks(
    consentCard(service, step, opts.inThread === undefined ? {} : { inThread: opts.inThread }),
    opts.acceptValue,
  );
}

/** One person's view of their connections and grants, for /connections and App Home. */
export interface ConnectionsModel {
  readonly mine: readonly Connection[];
  readonly grantsGiven: readonly Grant[];
  readonly grantsReceived: readonly Grant[];
  readonly admin?: {
    readonly all: readonly Connection[];
    readonly recentAudit: readonly AuditRecord[];
    readonly toolChanges?: readonly ToolPin[];
  };
  /** The tenant this view is for (the workspace, and its name when the installation knows it). */
  readonly tenant?: { readonly teamId: string; readonly name?: string | undefined };
}

function connectionLine(c: Connection): string {
  const where =
    c.scope === "thread" ? `thread <#${c.channelId}>` : c.scope === "user" ? "everywhere" : "shared identity";
  return `*${esc(c.service)}* · ${where} · ${c.status} · expires ${when(c.expiresAt)}`;
}

function revokeButton(actionId: string, value: string, label = "Revoke"): types.Button {
  return { type: "button", action_id: actionId, text: { type: "plain_text", text: label }, style: "danger", value };
}

/** Blocks listing connections and grants, each with a revoke button. */
export function connectionsBlocks(m: ConnectionsModel): Block[] {
  const blocks: Block[] = [{ type: "header", text: { type: "plain_text", text: "My connections" } }];
  if (m.mine.length === 0)
    blocks.push({ type: "section", text: { type: "mrkdwn", text: "_None. Use /connect <service> in a thread._" } });
  for (const c of m.mine)
    blocks.push({
      type: "section",
      text: { type: "mrkdwn", text: connectionLine(c) },
      accessory: revokeButton(ACTIONS.revokeConnection, c.id),
    });
  blocks.push({ type: "header", text: { type: "plain_text", text: "Grants I gave" } });
  if (m.grantsGiven.length === 0) blocks.push({ type: "section", text: { type: "mrkdwn", text: "_None._" } });
  for (const g of m.grantsGiven) {
    blocks.push({
      type: "section",
      text: { type: "mrkdwn", text: `<@${g.borrowerUserId}> may use your *${esc(g.service)}* in <#${g.channelId}>` },
      accessory: revokeButton(ACTIONS.revokeGrant, g.id),
    });
  }
  blocks.push({ type: "header", text: { type: "plain_text", text: "Grants I got" } });
  if (m.grantsReceived.length === 0) blocks.push({ type: "section", text: { type: "mrkdwn", text: "_None._" } });
  for (const g of m.grantsReceived) {
    blocks.push({
      type: "section",
      text: { type: "mrkdwn", text: `You may use <@${g.ownerUserId}>'s *${esc(g.service)}* in <#${g.channelId}>` },
      accessory: revokeButton(ACTIONS.revokeGrant, g.id, "Give back"),
    });
  }
  if (m.admin) {
    blocks.push({ type: "header", text: { type: "plain_text", text: "All connections (admin)" } });
    if (m.admin.all.length === 0) blocks.push({ type: "section", text: { type: "mrkdwn", text: "_None._" } });
    for (const c of m.admin.all.slice(0, 40)) {
      blocks.push({
        type: "section",
        text: { type: "mrkdwn", text: `${c.ownerUserId ? `<@${c.ownerUserId}>` : "shared"} · ${connectionLine(c)}` },
        accessory: revokeButton(ACTIONS.adminRevoke, c.id),
      });
    }
    // Vendor tools changed since pinned: refused until an admin accepts or rejects them here or in the CLI.
    blocks.push(...toolChangeBlocks(m.admin.toolChanges ?? []));
    blocks.push({ type: "header", text: { type: "plain_text", text: "Recent audit" } });
    const lines = m.admin.recentAudit.map(
      (r) =>
        `${new Date(r.at).toISOString()} ${r.event}${r.decision ? ` ${r.decision}` : ""}${r.callerUserId ? ` <@${r.callerUserId}>` : ""}${r.service ? ` ${esc(r.service)}` : ""}${r.tool ? ` ${esc(r.tool)}` : ""}`,
    );
    blocks.push({
      type: "section",
      text: { type: "mrkdwn", text: lines.length ? `\`\`\`${lines.join("\n")}\`\`\`` : "_No events._" },
    });
  }
  // Which workspace these connections belong to: each tenant's are its own.
  if (m.tenant)
    blocks.push({
      type: "context",
      elements: [
        {
          type: "mrkdwn",
          text: `Connections of ${m.tenant.name ? `*${esc(m.tenant.name)}* (${m.tenant.teamId})` : m.tenant.teamId} only`,
        },
      ],
    });
  return blocks;
}
