import type { App } from "@slack/bolt";
import type { ApprovalService } from "../approvals/approval-service.js";
import type { Clock } from "../clock/clock.js";
import type { ServiceRegistry } from "../config/registry.js";
import type { GrantsAdmin } from "../connections/grants-admin.js";
import { errorMessage } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";
import type { LoginService } from "../login/login-service.js";
import { PinReview } from "../pinning/review.js";
import type { PinService } from "../pinning/service.js";
import type { Store } from "../store/store.js";
import type { TurnStore } from "../turns/turn-store.js";
import { registerApprovalViewHandler } from "./approval-view-handler.js";
import { ACTIONS, connectionsBlocks, consentBlocks, consentValue } from "./blocks.js";
import { parseClick, reply } from "./clicks.js";
import { connectionsModel, publishHome } from "./home.js";
import { mintFailureReply } from "./mint-replies.js";
import {
  approvalValue,
  consentAcceptValue,
  eventEnvelope,
  homeOpenedEvent,
  memberChangeEvent,
  messageEvent,
  parseJsonValue,
  slashCommand,
  tenantContext,
} from "./payloads.js";
import { registerPinHandlers } from "./pin-handlers.js";
import { registerRevokeHandlers } from "./revoke-handlers.js";
import { looksLikeSecret } from "./secret-detect.js";
import { SeenEvents } from "./seen-events.js";
import type { SlackApis } from "./tenant-api.js";

/** Tells whether two teams are one tenant. */
export interface TenantMatch {
  sameInstallation(teamA: string, teamB: string): Promise<boolean>;
}

/** What the handlers invalidate when Slack reports a membership change (the channel membership cache). */
export interface MembershipInvalidation {
  invalidate(teamId: string, channelId: string): void;
}

/** What the Slack listeners act on. */
export interface SlackHandlerDeps {
  /** Slack per tenant: every call goes out with the token of the team the request came from. */
  readonly apis: SlackApis;
  /** Whether two teams are served by one installation (an org-wide install serves all its workspaces). */
  readonly tenants: TenantMatch;
  /** The workspace's name for the App Home and /connections footer. */
  readonly tenantName?: (teamId: string) => Promise<string | undefined>;
  readonly store: Store;
  readonly registry: ServiceRegistry;
  /** Revokes (owner, grant, admin) with their audit rows; also says who is an admin. */
  readonly grants: GrantsAdmin;
  readonly approvals: ApprovalService;
  readonly turns: TurnStore;
  readonly membership?: MembershipInvalidation;
  /** Mints one-time login links; without it the consent card says login is not available. */
  readonly logins?: Pick<LoginService, "mint">;
  /** Tool pins: an admin accepts or rejects a changed tool definition from the App Home. */
  readonly pins: PinService;
  readonly clock: Clock;
  readonly log: Logger;
  /** Message event ids already handled (default: a fresh bounded set). */
  readonly seenEvents?: SeenEvents;
}

// Which decision each approval button stands for.
const DECISIONS: ReadonlyMap<string, "allowed_thread" | "allowed_once" | "denied"> = new Map([
  [ACTIONS.allowThread, "allowed_thread"],
  [ACTIONS.allowOnce, "allowed_once"],
  [ACTIONS.deny, "denied"],
]);

const CLICK_REPLIES = {
  not_owner: "Only the account owner can answer this request.",
  expired: "This request has expired; nothing was run.",
  already_decided: "This request was already answered.",
  unknown: "This request is not valid.",
  not_offered: "This request can only be denied: its arguments could not all be shown to you exactly.",
} as const;

/** Registers every Slack listener on `app`. */
export function registerSlackHandlers(app: App, d: SlackHandlerDeps): void {
  // --- approval card clicks: verified by Bolt (signature), authorised here (owner only), applied once by the store.
  app.action(
    new RegExp(`^(${ACTIONS.allowThread}|${ACTIONS.allowOnce}|${ACTIONS.deny})$`),
    async ({ ack, body: rawBody, action: rawAction, respond, context }) => {
      await ack();
      const click = parseClick(rawBody, rawAction, d.log, context);
      if (!click) return;
      const { body, action } = click;
      const decision = DECISIONS.get(action.action_id);
      const parsed = parseJsonValue(approvalValue, action.value);
      if (!parsed || !decision) {
        // A forged or corrupted button value: refused like an unknown request, and recorded.
        await d.store.audit.append([
          {
            at: d.clock.now(),
            event: "approval_rejected_click",
            teamId: click.teamId,
            approverUserId: body.user.id,
            actor: body.user.id,
            decision: "click_invalid",
          },
        ]);
      }
      // A card is answered only in the tenant it was sent in: the same user id in another workspace is someone else.
      const result =
        parsed && decision
          ? await d.approvals.decide(parsed.a, parsed.n, body.user.id, decision, (team) =>
              d.tenants.sameInstallation(team, click.teamId),
            )
          : "unknown";
      if (result !== "applied") await reply(respond, body, CLICK_REPLIES[result], d.log);
    },
  );
  registerApprovalViewHandler(app, d);
  registerRevokeHandlers(app, d);
  // The admin check is the one the revoke buttons use (SLAUDE_ADMINS or a Slack workspace admin).
  registerPinHandlers(app, {
    ...d,
    review: new PinReview({ pins: d.pins, admins: d.grants, store: d.store, clock: d.clock }),
  });

  // --- /connect <service>
  app.command("/connect", async ({ ack, command: rawCommand, respond, context }) => {
    await ack();
    const parsedCommand = slashCommand.safeParse(rawCommand);
    if (!parsedCommand.success || !tenantContext.safeParse(context).success)
      return void d.log.warn("ignored a malformed /connect payload");
    const command = parsedCommand.data;
    const text = command.text.trim();
    if (looksLikeSecret(text)) {
      // Never echo, store or log it: say so and ask for rotation.
      d.log.warn("a secret was typed into /connect; it was discarded", { user: command.user_id });
      await respond({
        response_type: "ephemeral",
        text: ":warning: That looked like a password or token. It was *not* stored or shown to anyone, but it has left your password manager: please rotate it now. Use `/connect <service>` and enter credentials only on the private login page.",
      });
      return;
    }
    const service = d.registry.get(text.toLowerCase());
    if (!service) {
      const names = d.registry
        .list()
        .map((s) => `\`${s.name}\``)
        .join(", ");
      await respond({
        response_type: "ephemeral",
        text: text
          ? `There is no service called that. Available: ${names || "none"}.`
          : `Usage: /connect <service>. Available: ${names || "none"}.`,
      });
      return;
    }
    const acceptValue = consentValue({
      userId: command.user_id,
      service: service.name,
      channelId: command.channel_id,
      threadTs: null,
    });
    await respond({
      response_type: "ephemeral",
      text: `Connect ${service.displayName}`,
      blocks: consentBlocks(service, { loginAvailable: Boolean(d.logins), inThread: false, acceptValue }),
    });
  });

  // --- consent accepted: mint a one-time link for the clicker, shown only to them.
  app.action(ACTIONS.consentAccept, async ({ ack, body: rawBody, action: rawAction, respond, context }) => {
    await ack();
    const click = parseClick(rawBody, rawAction, d.log, context);
    if (!click) return;
    const { body, action, teamId } = click;
    const v = parseJsonValue(consentAcceptValue, action.value);
    if (!v || v.u !== body.user.id) {
      await d.store.audit.append([
        {
          at: d.clock.now(),
          event: "login_refused",
          teamId,
          callerUserId: body.user.id,
          decision: "consent_not_yours",
          ...(v ? { service: v.s } : {}),
        },
      ]);
      await reply(respond, body, "This card is for someone else.", d.log);
      return;
    }
    const service = d.registry.get(v.s);
    if (!service || !d.logins) {
      await reply(respond, body, "Signing in is not available for this service right now.", d.log);
      return;
    }
    try {
      const link = await d.logins.mint({
        teamId,
        userId: v.u,
        service: v.s,
        channelId: v.c,
        threadTs: v.t,
        ...(v.t ? {} : { scope: service.entry.scopes.includes("user") ? ("user" as const) : ("thread" as const) }),
      });
      if (!body.response_url) return;
      await respond({
        response_type: "ephemeral",
        replace_original: true,
        text: `Sign in to ${service.displayName}`,
        blocks: consentBlocks(service, { loginAvailable: true, loginUrl: link.url, inThread: Boolean(v.t) }),
      });
    } catch (err) {
      d.log.warn("could not mint a login link", { service: v.s, error: errorMessage(err) });
      await reply(respond, body, mintFailureReply(err, service), d.log);
    }
  });
  // The link button opens a URL; Slack still sends the click, which only needs an ack.
  app.action(ACTIONS.consentOpen, async ({ ack }) => {
    await ack();
  });

  // --- /connections
  app.command("/connections", async ({ ack, command: rawCommand, respond, context }) => {
    await ack();
    const command = slashCommand.safeParse(rawCommand);
    const tenant = tenantContext.safeParse(context);
    if (!command.success || !tenant.success) return void d.log.warn("ignored a malformed /connections payload");
    const model = await connectionsModel(d, tenant.data.teamId, command.data.user_id);
    await respond({ response_type: "ephemeral", text: "Your connections", blocks: connectionsBlocks(model) });
  });

  // --- App Home
  app.event("app_home_opened", async ({ event: rawEvent, context }) => {
    const event = homeOpenedEvent.safeParse(rawEvent);
    const tenant = tenantContext.safeParse(context);
    if (!event.success || !tenant.success) return;
    if (event.data.tab && event.data.tab !== "home") return;
    await publishHome(d, tenant.data.teamId, event.data.user);
  });

  // --- messages: human messages in served threads are turns; a message carrying a secret is deleted.
  // Each event id is applied once (Slack retries and replays re-send it), and a message sets the
  // turn only when it is newer than the thread's current turn (the turn rules order by the message ts).
  const seen = d.seenEvents ?? new SeenEvents();
  app.event("message", async ({ event, body, context }) => {
    const parsedEvent = messageEvent.safeParse(event);
    const envelope = eventEnvelope.safeParse(body);
    const tenant = tenantContext.safeParse(context);
    if (!parsedEvent.success || !envelope.success || !tenant.success) return;
    const m = parsedEvent.data;
    if (m.bot_id || !m.user || (m.subtype && m.subtype !== "thread_broadcast" && m.subtype !== "file_share")) return;
    const eventId = envelope.data.event_id;
    if (eventId !== undefined && !seen.firstTime(eventId)) return;
    const teamId = tenant.data.teamId;
    if (m.text && looksLikeSecret(m.text)) {
      let deleted = false;
      const api = await d.apis.forTeam(teamId);
      try {
        await api.deleteMessage(m.channel, m.ts);
        deleted = true;
      } catch (err) {
        // A bot token can only delete the bot's own messages; say so rather than claim it is gone.
        d.log.warn("could not delete a message carrying a secret", { channel: m.channel, error: errorMessage(err) });
      }
      const text = deleted
        ? ":warning: Your message looked like it contained a password or token, so I removed it. Please rotate that secret, and use /connect to connect accounts."
        : ":warning: Your message looked like it contained a password or token. I could not remove it: please delete it yourself and rotate that secret. Use /connect to connect accounts.";
      await api
        .postEphemeral({ channel: m.channel, user: m.user, text, ...(m.thread_ts ? { threadTs: m.thread_ts } : {}) })
        .catch(() => {});
    }
    if (!m.thread_ts) return;
    const thread = { teamId, channelId: m.channel, threadTs: m.thread_ts };
    if (await d.turns.isServed(thread)) await d.turns.fromSlack(thread, m.user, m.ts, d.clock.now());
  });

  // --- membership changes invalidate the cached answers at once.
  const invalidate = async ({ event, context }: { event: unknown; context: unknown }) => {
    const e = memberChangeEvent.safeParse(event);
    const tenant = tenantContext.safeParse(context);
    if (e.success && tenant.success) d.membership?.invalidate(tenant.data.teamId, e.data.channel);
  };
  app.event("member_left_channel", invalidate);
  app.event("member_joined_channel", invalidate);
}
