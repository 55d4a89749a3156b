import type { ApprovalOutcome } from "../approvals/channel.js";
import type { AuditRecord } from "../audit/event.js";
import type { Service } from "../config/registry.js";
import type { Approval, Connection, Grant } from "../store/records.js";
import type { types } from "@slack/bolt";
import type { Block } from "./slack-api.js";

// Pure Block Kit rendering: every text shown in Slack comes from real records, never from model text.

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
} as const;

/** Escapes Slack mrkdwn control characters in user-derived text. */
export function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** A Slack date token (shown in the reader's time zone) with an ISO fallback. */
export function when(ms: number): string {
  const secs = Math.floor(ms / 1000);
  return `<!date^${secs}^{date_short_pretty} {time}|${new Date(ms).toISOString()}>`;
}

/** The value carried by approval buttons: which approval, and its nonce. */
export function approvalButtonValue(a: Approval): string {
  return JSON.stringify({ a: a.id, n: a.nonce });
}

/** A link to the thread a card is about. */
export function threadLink(card: { teamId: string; channelId: string; threadTs: string }): string {
  return `<https://slack.com/app_redirect?team=${card.teamId}&channel=${card.channelId}&message_ts=${card.threadTs}|the thread>`;
}

const OUTCOME_TEXT: Record<ApprovalOutcome, string> = {
  allowed_thread: "allowed for this thread",
  allowed_once: "allowed once",
  denied: "denied",
  expired: "expired without an answer",
};

/** The approval card after it settled: same facts, no buttons. */
export function approvalSettledBlocks(a: Approval, outcome: ApprovalOutcome): Block[] {
  return [
    { type: "section", text: { type: "mrkdwn", text: `<@${a.borrowerUserId}>'s request to run \`${esc(a.tool)}\` on your *${esc(a.service)}* account: *${OUTCOME_TEXT[outcome]}*.` } },
    { type: "context", elements: [{ type: "mrkdwn", text: `Request ${a.id}` }] },
  ];
}

function waitText(ms: number): string {
  return ms < 120_000 ? `${Math.max(1, Math.round(ms / 1000))} seconds` : `${Math.round(ms / 60_000)} minutes`;
}

/** The note in the thread telling the borrower what happened. */
export function threadNoteText(a: Approval, outcome: ApprovalOutcome | "asked", timeoutMs?: number): string {
  switch (outcome) {
    case "asked":
      return `<@${a.borrowerUserId}>: this needs <@${a.ownerUserId}>'s ${a.service} account. I've asked them to approve \`${a.tool}\`; I'll wait up to ${waitText(timeoutMs ?? 0)}.`;
    case "allowed_thread":
      return `<@${a.ownerUserId}> allowed <@${a.borrowerUserId}> to use their ${a.service} account in this thread.`;
    case "allowed_once":
      return `<@${a.ownerUserId}> allowed \`${a.tool}\` once.`;
    case "denied":
      return `<@${a.ownerUserId}> declined the request to use their ${a.service} account.`;
    case "expired":
      return `<@${a.ownerUserId}> didn't answer in time, so \`${a.tool}\` did not run.`;
  }
}

/** What a capture strategy collects, in a user's words. */
export function captureDescription(service: Service): string {
  const c = service.entry.capture;
  switch (c.strategy) {
    case "paste":
      return `an API token you paste into a private page (${c.fields.map((f) => f.label).join(", ")})`;
    case "cookie":
      return `your signed-in browser session for ${service.entry.loginDomains.join(", ") || "the service"} (cookies only)`;
    case "oauth":
      return `an OAuth token for ${service.displayName}${c.scopes.length ? ` with scopes ${c.scopes.join(", ")}` : ""}`;
  }
}

/** What the consent card's Continue button carries: who may accept, for which service and thread. */
export function consentValue(v: { userId: string; service: string; channelId: string | null; threadTs: string | null }): string {
  return JSON.stringify({ u: v.userId, s: v.service, c: v.channelId, t: v.threadTs });
}

/** The consent card for connecting an account: what is captured and kept, then the next step. */
export function consentBlocks(service: Service, opts: { loginAvailable: boolean; loginUrl?: string; inThread?: boolean; acceptValue?: string }): Block[] {
  const hours = Math.round(service.ttlMs / 3_600_000);
  const ttl = hours >= 1 ? `${hours} hour(s)` : `${Math.round(service.ttlMs / 60_000)} minute(s)`;
  const blocks: Block[] = [
    { type: "section", text: { type: "mrkdwn", text: `*Connect ${esc(service.displayName)}*` } },
    {
      type: "section",
      text: {
        type: "mrkdwn",
        text: `• *What is captured:* ${esc(captureDescription(service))}\n• *Storage:* encrypted (AES-256-GCM), never shown to the assistant\n• *Scope:* ${opts.inThread === false ? "the thread where you connect it" : "this thread only"}; others there can use it only with your approval\n• *Expires:* after ${ttl}, or when you revoke it (/connections)`,
      },
    },
  ];
  if (opts.loginAvailable && opts.loginUrl) {
    blocks.push({ type: "actions", elements: [{ type: "button", text: { type: "plain_text", text: "Open private sign-in page" }, style: "primary", url: opts.loginUrl, action_id: ACTIONS.consentOpen }] });
    blocks.push({ type: "context", elements: [{ type: "mrkdwn", text: "This link works once, for you only, and expires soon. Don't share it." }] });
  } else if (opts.loginAvailable && opts.acceptValue) {
    blocks.push({ type: "actions", elements: [{ type: "button", text: { type: "plain_text", text: "Continue" }, style: "primary", value: opts.acceptValue, action_id: ACTIONS.consentAccept }] });
  } else {
    blocks.push({ type: "context", elements: [{ type: "mrkdwn", text: "Browser login is not available on this server yet. An operator can add the connection with `slaude-connect connections add`." }] });
  }
  return blocks;
}

/** One person's view of their connections and grants, for /connections and App Home. */
export interface ConnectionsModel {
  readonly mine: readonly Connection[];
  readonly grantsGiven: readonly Grant[];
  readonly grantsReceived: readonly Grant[];
  readonly admin?: { readonly all: readonly Connection[]; readonly recentAudit: readonly AuditRecord[] };
}

function connectionLine(c: Connection): string {
  const where = c.scope === "thread" ? `thread <#${c.channelId}>` : c.scope === "user" ? "everywhere" : "shared identity";
  return `*${esc(c.service)}* · ${where} · ${c.status} · expires ${when(c.expiresAt)}`;
}

function revokeButton(actionId: string, value: string, label = "Revoke"): types.Button {
  return { type: "button", action_id: actionId, text: { type: "plain_text", text: label }, style: "danger", value };
}

/** Blocks listing connections and grants, each with a revoke button. */
export function connectionsBlocks(m: ConnectionsModel): Block[] {
  const blocks: Block[] = [{ type: "header", text: { type: "plain_text", text: "My connections" } }];
  if (m.mine.length === 0) blocks.push({ type: "section", text: { type: "mrkdwn", text: "_None. Use /connect <service> in a thread._" } });
  for (const c of m.mine) blocks.push({ type: "section", text: { type: "mrkdwn", text: connectionLine(c) }, accessory: revokeButton(ACTIONS.revokeConnection, c.id) });
  blocks.push({ type: "header", text: { type: "plain_text", text: "Grants I gave" } });
  if (m.grantsGiven.length === 0) blocks.push({ type: "section", text: { type: "mrkdwn", text: "_None._" } });
  for (const g of m.grantsGiven) {
    blocks.push({ type: "section", text: { type: "mrkdwn", text: `<@${g.borrowerUserId}> may use your *${esc(g.service)}* in <#${g.channelId}>` }, accessory: revokeButton(ACTIONS.revokeGrant, g.id) });
  }
  blocks.push({ type: "header", text: { type: "plain_text", text: "Grants I got" } });
  if (m.grantsReceived.length === 0) blocks.push({ type: "section", text: { type: "mrkdwn", text: "_None._" } });
  for (const g of m.grantsReceived) {
    blocks.push({ type: "section", text: { type: "mrkdwn", text: `You may use <@${g.ownerUserId}>'s *${esc(g.service)}* in <#${g.channelId}>` }, accessory: revokeButton(ACTIONS.revokeGrant, g.id, "Give back") });
  }
  if (m.admin) {
    blocks.push({ type: "header", text: { type: "plain_text", text: "All connections (admin)" } });
    if (m.admin.all.length === 0) blocks.push({ type: "section", text: { type: "mrkdwn", text: "_None._" } });
    for (const c of m.admin.all.slice(0, 40)) {
      blocks.push({ type: "section", text: { type: "mrkdwn", text: `${c.ownerUserId ? `<@${c.ownerUserId}>` : "shared"} · ${connectionLine(c)}` }, accessory: revokeButton(ACTIONS.adminRevoke, c.id) });
    }
    blocks.push({ type: "header", text: { type: "plain_text", text: "Recent audit" } });
    const lines = m.admin.recentAudit.map((r) => `${new Date(r.at).toISOString()} ${r.event}${r.decision ? ` ${r.decision}` : ""}${r.callerUserId ? ` <@${r.callerUserId}>` : ""}${r.service ? ` ${esc(r.service)}` : ""}${r.tool ? ` ${esc(r.tool)}` : ""}`);
    blocks.push({ type: "section", text: { type: "mrkdwn", text: lines.length ? "```" + lines.join("\n") + "```" : "_No events._" } });
  }
  return blocks;
}
