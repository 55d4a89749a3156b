import type { App } from "@slack/bolt";
import { revokedCard } from "../cards/notice-cards.js";
import type { GrantsAdmin } from "../connections/grants-admin.js";
import { errorMessage } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";
import { ACTIONS } from "./blocks.js";
import { noticeText } from "./card-mrkdwn.js";
import { parseClick, reply } from "./clicks.js";
import { type HomeDeps, publishHome } from "./home.js";
import { idValue } from "./payloads.js";

/** What the revoke buttons need: the grants/admin service does the revoking and its audit. */
export interface RevokeDeps extends HomeDeps {
  readonly grants: GrantsAdmin;
  readonly log: Logger;
}

/** Registers the revoke buttons of /connections and App Home: own connection, a grant, an admin revoke. */
export function registerRevokeHandlers(app: App, d: RevokeDeps): void {
  // --- revoke buttons (/connections and App Home)
  app.action(ACTIONS.revokeConnection, async ({ ack, body: rawBody, action: rawAction, respond, context }) => {
    await ack();
    const click = parseClick(rawBody, rawAction, d.log, context);
    if (!click) return;
    const { body, action, teamId } = click;
    const id = idValue.safeParse(action.value);
    const r = await d.grants.revokeOwn(teamId, id.success ? id.data : undefined, body.user.id);
    if (r.kind === "not_yours") {
      await reply(respond, body, "That is not one of your connections.", d.log);
      return;
    }
    await reply(
      respond,
      body,
      `Revoked your ${r.connection.service} connection. Its credential is wiped and every grant on it revoked.`,
      d.log,
    );
    await publishHome(d, teamId, body.user.id).catch(() => {});
  });

  app.action(ACTIONS.revokeGrant, async ({ ack, body: rawBody, action: rawAction, respond, context }) => {
    await ack();
    const click = parseClick(rawBody, rawAction, d.log, context);
    if (!click) return;
    const { body, action, teamId } = click;
    const id = idValue.safeParse(action.value);
    const user = body.user.id;
    // Only the owner or the borrower, and only in the workspace the click came from.
    const r = id.success
      ? await d.grants.revokeGrant(
          id.data,
          user,
          (g) => (g.ownerUserId === user || g.borrowerUserId === user) && g.teamId === teamId,
        )
      : ({ kind: "not_found" } as const);
    if (r.kind === "not_found" || r.kind === "refused") {
      await reply(respond, body, "That is not a grant you gave or got.", d.log);
      return;
    }
    await reply(respond, body, "Grant revoked. It takes effect on the next call.", d.log);
    await publishHome(d, r.grant.teamId, user).catch(() => {});
  });

  app.action(ACTIONS.adminRevoke, async ({ ack, body: rawBody, action: rawAction, respond, context }) => {
    await ack();
    const click = parseClick(rawBody, rawAction, d.log, context);
    if (!click) return;
    const { body, action, teamId } = click;
    const admin = body.user.id;
    const id = idValue.safeParse(action.value);
    const r = await d.grants.adminRevoke(teamId, id.success ? id.data : undefined, admin);
    if (r.kind === "not_admin") {
      await reply(respond, body, "Only slaude-connect admins can do that.", d.log);
      return;
    }
    if (r.kind === "not_found") {
      await reply(respond, body, "No such connection.", d.log);
      return;
    }
    const conn = r.connection;
    const ended = r.kind === "revoked";
    if (ended && conn.ownerUserId) {
      try {
        const api = await d.apis.forTeam(conn.teamId);
        const dm = await api.openDm(conn.ownerUserId);
        await api.postMessage({ channel: dm, text: noticeText(revokedCard(conn, admin)) });
      } catch (err) {
        d.log.warn("could not tell the owner about an admin revoke", {
          connectionId: conn.id,
          error: errorMessage(err),
        });
      }
    }
    await reply(
      respond,
      body,
      ended ? `Revoked ${conn.id} (${conn.service}); the owner was told.` : `${conn.id} was not active.`,
      d.log,
    );
    await publishHome(d, teamId, admin).catch(() => {});
  });
}
