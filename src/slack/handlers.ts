import type { App } from "@slack/bolt";
import { z } from "zod";
import type { ApprovalService } from "../approvals/approval-service.js";
import type { Clock } from "../clock/clock.js";
import type { ServiceRegistry } from "../config/registry.js";
import type { ConnectionLifecycle } from "../connections/lifecycle.js";
import type { Logger } from "../log/logger.js";
import type { CachedMembership } from "../membership/membership.js";
import type { Store } from "../store/store.js";
import type { TurnState } from "../turns/turn-state.js";
import type { LoginService } from "../login/login-service.js";
import { SeenEvents } from "./seen-events.js";
import type { AdminDirectory } from "./admins.js";
import { registerApprovalViewHandler } from "./approval-view-handler.js";
import { ACTIONS, connectionsBlocks, consentBlocks, consentValue, type ConnectionsModel } from "./blocks.js";
import { revokedCard } from "../cards/notice-cards.js";
import { noticeText } from "./card-mrkdwn.js";
import { mintFailureReply } from "./mint-replies.js";
import { looksLikeSecret } from "./secret-detect.js";
import type { SlackApi } from "./slack-api.js";

/** What the Slack listeners act on. */
export interface SlackHandlerDeps {
  readonly api: SlackApi;
  readonly store: Store;
  readonly registry: ServiceRegistry;
  readonly lifecycle: ConnectionLifecycle;
  readonly approvals: ApprovalService;
  readonly turns: TurnState;
  readonly admins: AdminDirectory;
  readonly membership?: CachedMembership;
  /** Mints one-time login links; without it the consent card says login is not available. */
  readonly logins?: Pick<LoginService, "mint">;
  readonly clock: Clock;
  readonly log: Logger;
  /** Message event ids already handled (default: a fresh bounded set). */
  readonly seenEvents?: SeenEvents;
}

const consentAcceptValue = z
  .object({ u: z.string().regex(/^[UW][A-Z0-9]{2,30}$/), s: z.string().min(1).max(64), c: z.string().max(64).nullable(), t: z.string().max(32).nullable() })
  .strict();

const approvalValue = z.object({ a: z.string().min(1).max(64), n: z.string().min(1).max(64) }).strict();
const idValue = z.string().regex(/^(conn|grant)_[A-Za-z0-9_-]{8,40}$/);

const DECISIONS = {
  [ACTIONS.allowThread]: "allowed_thread",
  [ACTIONS.allowOnce]: "allowed_once",
  [ACTIONS.deny]: "denied",
} as const;

const CLICK_REPLIES = {
  not_owner: "Only the account owner can answer this request.",
  expired: "This request has expired; nothing was run.",
  already_decided: "This request was already answered.",
  unknown: "This request is not valid.",
  not_offered: "This request can only be denied: its arguments could not all be shown to you exactly.",
} as const;

/** Answers a click privately; Home-tab clicks carry no response_url, so there is nothing to answer into. */
async function reply(respond: (m: { response_type: "ephemeral"; replace_original: false; text: string }) => Promise<unknown>, body: unknown, text: string, log: Logger): Promise<void> {
  if (!(body as { response_url?: string }).response_url) return;
  try {
    await respond({ response_type: "ephemeral", replace_original: false, text });
  } catch (err) {
    log.warn("could not answer a click", { error: (err as Error).message });
  }
}

/** One user's connections and grants (and, for admins, everyone's plus recent audit). */
export async function connectionsModel(d: SlackHandlerDeps, teamId: string, userId: string): Promise<ConnectionsModel> {
  const [mine, grantsGiven, grantsReceived] = await Promise.all([
    d.store.connections.list({ teamId, ownerUserId: userId, statuses: ["active", "needs_login"] }),
    d.store.grants.list({ teamId, ownerUserId: userId, liveOnly: true }),
    d.store.grants.list({ teamId, borrowerUserId: userId, liveOnly: true }),
  ]);
  if (!(await d.admins.isAdmin(userId))) return { mine, grantsGiven, grantsReceived };
  const [all, recentAudit] = await Promise.all([
    d.store.connections.list({ teamId, statuses: ["active", "needs_login"] }),
    d.store.audit.query({ teamId, limit: 15, take: "latest" }),
  ]);
  return { mine, grantsGiven, grantsReceived, admin: { all, recentAudit } };
}

/** Publishes the App Home tab for a user. */
export async function publishHome(d: SlackHandlerDeps, teamId: string, userId: string): Promise<void> {
  await d.api.publishHome(userId, { type: "home", blocks: connectionsBlocks(await connectionsModel(d, teamId, userId)) });
}

/** Registers every Slack listener on `app`. */
export function registerSlackHandlers(app: App, d: SlackHandlerDeps): void {
  // --- approval card clicks: verified by Bolt (signature), authorised here (owner only), applied once by the store.
  app.action(new RegExp(`^(${ACTIONS.allowThread}|${ACTIONS.allowOnce}|${ACTIONS.deny})$`), async ({ ack, body, action, respond }) => {
    await ack();
    const a = action as { action_id: keyof typeof DECISIONS; value?: string };
    let parsed: z.infer<typeof approvalValue> | undefined;
    try {
      parsed = approvalValue.parse(JSON.parse(a.value ?? ""));
    } catch {
      parsed = undefined;
      // A forged or corrupted button value: refused like an unknown request, and recorded.
      await d.store.audit.append([{ at: d.clock.now(), event: "approval_rejected_click", teamId: body.team?.id ?? null, approverUserId: body.user.id, actor: body.user.id, decision: "click_invalid" }]);
    }
    const result = parsed ? await d.approvals.decide(parsed.a, parsed.n, body.user.id, DECISIONS[a.action_id]) : "unknown";
    if (result !== "applied") await reply(respond, body, CLICK_REPLIES[result], d.log);
  });
  registerApprovalViewHandler(app, d);

  // --- revoke buttons (/connections and App Home)
  app.action(ACTIONS.revokeConnection, async ({ ack, body, action, respond }) => {
    await ack();
    const id = idValue.safeParse((action as { value?: string }).value);
    const teamId = body.team?.id ?? "";
    const conn = id.success ? await d.store.connections.get(id.data) : undefined;
    if (!conn || conn.ownerUserId !== body.user.id || conn.teamId !== teamId) {
      await reply(respond, body, "That is not one of your connections.", d.log);
      return;
    }
    await d.lifecycle.revoke(conn.id, body.user.id, "revoked by owner");
    await reply(respond, body, `Revoked your ${conn.service} connection. Its credential is wiped and every grant on it revoked.`, d.log);
    await publishHome(d, teamId, body.user.id).catch(() => {});
  });

  app.action(ACTIONS.revokeGrant, async ({ ack, body, action, respond }) => {
    await ack();
    const id = idValue.safeParse((action as { value?: string }).value);
    const g = id.success ? await d.store.grants.get(id.data) : undefined;
    const user = body.user.id;
    if (!g || (g.ownerUserId !== user && g.borrowerUserId !== user) || g.teamId !== body.team?.id) {
      await reply(respond, body, "That is not a grant you gave or got.", d.log);
      return;
    }
    const at = d.clock.now();
    await d.store.grants.revoke(g.id, user, at, [
      { at, event: "grant_revoked", teamId: g.teamId, channelId: g.channelId, threadTs: g.threadTs, ownerUserId: g.ownerUserId, callerUserId: g.borrowerUserId, connectionId: g.connectionId, service: g.service, actor: user },
    ]);
    await reply(respond, body, "Grant revoked. It takes effect on the next call.", d.log);
    await publishHome(d, g.teamId, user).catch(() => {});
  });

  app.action(ACTIONS.adminRevoke, async ({ ack, body, action, respond }) => {
    await ack();
    const admin = body.user.id;
    const teamId = body.team?.id ?? "";
    const id = idValue.safeParse((action as { value?: string }).value);
    if (!(await d.admins.isAdmin(admin))) {
      await d.store.audit.append([{ at: d.clock.now(), event: "admin_action", teamId, decision: "refused_not_admin", actor: admin, ...(id.success ? { connectionId: id.data } : {}) }]);
      await reply(respond, body, "Only slaude-connect admins can do that.", d.log);
      return;
    }
    const conn = id.success ? await d.store.connections.get(id.data) : undefined;
    if (!conn || conn.teamId !== teamId) {
      await reply(respond, body, "No such connection.", d.log);
      return;
    }
    const ended = await d.lifecycle.revoke(conn.id, `admin:${admin}`, "revoked by admin");
    await d.store.audit.append([{ at: d.clock.now(), event: "admin_action", teamId, ownerUserId: conn.ownerUserId, connectionId: conn.id, service: conn.service, decision: "revoke", actor: admin }]);
    if (ended && conn.ownerUserId) {
      try {
        const dm = await d.api.openDm(conn.ownerUserId);
        await d.api.postMessage({ channel: dm, text: noticeText(revokedCard(conn, admin)) });
      } catch (err) {
        d.log.warn("could not tell the owner about an admin revoke", { connectionId: conn.id, error: (err as Error).message });
      }
    }
    await reply(respond, body, ended ? `Revoked ${conn.id} (${conn.service}); the owner was told.` : `${conn.id} was not active.`, d.log);
    await publishHome(d, teamId, admin).catch(() => {});
  });

  // --- /connect <service>
  app.command("/connect", async ({ ack, command, respond }) => {
    await ack();
    const text = command.text.trim();
    if (looksLikeSecret(text)) {
      // Never echo, store or log it: say so and ask for rotation.
      d.log.warn("a secret was typed into /connect; it was discarded", { user: command.user_id });
      await respond({ response_type: "ephemeral", text: ":warning: That looked like a password or token. It was *not* stored or shown to anyone, but it has left your password manager: please rotate it now. Use `/connect <service>` and enter credentials only on the private login page." });
      return;
    }
    const service = d.registry.get(text.toLowerCase());
    if (!service) {
      const names = d.registry.list().map((s) => `\`${s.name}\``).join(", ");
      await respond({ response_type: "ephemeral", text: text ? `There is no service called that. Available: ${names || "none"}.` : `Usage: /connect <service>. Available: ${names || "none"}.` });
      return;
    }
    const acceptValue = consentValue({ userId: command.user_id, service: service.name, channelId: command.channel_id, threadTs: null });
    await respond({ response_type: "ephemeral", text: `Connect ${service.displayName}`, blocks: consentBlocks(service, { loginAvailable: Boolean(d.logins), inThread: false, acceptValue }) as never });
  });

  // --- consent accepted: mint a one-time link for the clicker, shown only to them.
  app.action(ACTIONS.consentAccept, async ({ ack, body, action, respond }) => {
    await ack();
    let v: z.infer<typeof consentAcceptValue> | undefined;
    try {
      v = consentAcceptValue.parse(JSON.parse((action as { value?: string }).value ?? ""));
    } catch {
      v = undefined;
    }
    const teamId = body.team?.id ?? "";
    if (!v || v.u !== body.user.id) {
      await d.store.audit.append([{ at: d.clock.now(), event: "login_refused", teamId, callerUserId: body.user.id, decision: "consent_not_yours", ...(v ? { service: v.s } : {}) }]);
      await reply(respond, body, "This card is for someone else.", d.log);
      return;
    }
    const service = d.registry.get(v.s);
    if (!service || !d.logins) {
      await reply(respond, body, "Signing in is not available for this service right now.", d.log);
      return;
    }
    try {
      const link = await d.logins.mint({ teamId, userId: v.u, service: v.s, channelId: v.c, threadTs: v.t, ...(v.t ? {} : { scope: service.entry.scopes.includes("user") ? "user" as const : "thread" as const }) });
      if (!(body as { response_url?: string }).response_url) return;
      await respond({ response_type: "ephemeral", replace_original: true, text: `Sign in to ${service.displayName}`, blocks: consentBlocks(service, { loginAvailable: true, loginUrl: link.url, inThread: Boolean(v.t) }) as never });
    } catch (err) {
      d.log.warn("could not mint a login link", { service: v.s, error: (err as Error).message });
      await reply(respond, body, mintFailureReply(err, service), d.log);
    }
  });
  // The link button opens a URL; Slack still sends the click, which only needs an ack.
  app.action(ACTIONS.consentOpen, async ({ ack }) => {
    await ack();
  });

  // --- /connections
  app.command("/connections", async ({ ack, command, respond }) => {
    await ack();
    const model = await connectionsModel(d, command.team_id, command.user_id);
    await respond({ response_type: "ephemeral", text: "Your connections", blocks: connectionsBlocks(model) as never });
  });

  // --- App Home
  app.event("app_home_opened", async ({ event, body }) => {
    if (event.tab && event.tab !== "home") return;
    const teamId = (body as { team_id?: string }).team_id ?? "";
    await publishHome(d, teamId, event.user);
  });

  // --- messages: human messages in served threads are turns; a message carrying a secret is deleted.
  // Each event id is applied once (Slack retries and replays re-send it), and a message sets the
  // turn only when it is newer than the thread's current turn (TurnState orders by the message ts).
  const seen = d.seenEvents ?? new SeenEvents();
  app.event("message", async ({ event, body }) => {
    const m = event as { subtype?: string; bot_id?: string; user?: string; text?: string; channel: string; ts: string; thread_ts?: string };
    if (m.bot_id || !m.user || (m.subtype && m.subtype !== "thread_broadcast" && m.subtype !== "file_share")) return;
    const eventId = (body as { event_id?: unknown }).event_id;
    if (typeof eventId === "string" && !seen.firstTime(eventId)) return;
    const teamId = (body as { team_id?: string }).team_id ?? "";
    if (m.text && looksLikeSecret(m.text)) {
      let deleted = false;
      try {
        await d.api.deleteMessage(m.channel, m.ts);
        deleted = true;
      } catch (err) {
        // A bot token can only delete the bot's own messages; say so rather than claim it is gone.
        d.log.warn("could not delete a message carrying a secret", { channel: m.channel, error: (err as Error).message });
      }
      const text = deleted
        ? ":warning: Your message looked like it contained a password or token, so I removed it. Please rotate that secret, and use /connect to connect accounts."
        : ":warning: Your message looked like it contained a password or token. I could not remove it: please delete it yourself and rotate that secret. Use /connect to connect accounts.";
      await d.api.postEphemeral({ channel: m.channel, user: m.user, text, ...(m.thread_ts ? { threadTs: m.thread_ts } : {}) }).catch(() => {});
    }
    if (!m.thread_ts) return;
    const thread = { teamId, channelId: m.channel, threadTs: m.thread_ts };
    if (d.turns.isServed(thread)) d.turns.fromSlack(thread, m.user, m.ts, d.clock.now());
  });

  // --- membership changes invalidate the cached answers at once.
  const invalidate = async ({ event, body }: { event: { channel: string }; body: unknown }) => {
    d.membership?.invalidate((body as { team_id?: string }).team_id ?? "", event.channel);
  };
  app.event("member_left_channel", invalidate);
  app.event("member_joined_channel", invalidate);
}
