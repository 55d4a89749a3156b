import { connectionReadyCard, expiredCard, needsLoginCard, revokedCard } from "../cards/notice-cards.js";
import type { Service } from "../config/registry.js";
import type { Card } from "../domain/card.js";
import type { LoginNotifier } from "../login/login-service.js";
import type { Connection, LoginSession } from "../store/records.js";
import type { ConnectionEnd, OwnerNotices } from "../workspace/workspace.js";
import { noticeText } from "./card-mrkdwn.js";
import type { SlackApis } from "./tenant-api.js";

/** Sends a text-only notice card to a user in a DM. */
async function dmNotice(apis: SlackApis, teamId: string, userId: string, card: Card): Promise<void> {
  const api = await apis.forTeam(teamId);
  const dm = await api.openDm(userId);
  await api.postMessage({ channel: dm, text: noticeText(card) });
}

/** Tells a user in a DM that their new connection is ready (brief §6: the owner is told). */
export class SlackLoginNotifier implements LoginNotifier {
  constructor(private readonly apis: SlackApis) {}

  async connectionReady(session: LoginSession, connection: Connection, service: Service): Promise<void> {
    await dmNotice(this.apis, session.teamId, session.userId, connectionReadyCard(connection, service));
  }
}

/** Tells an owner their connection needs a new login (a refused OAuth refresh). */
export class SlackNeedsLoginNotifier {
  constructor(private readonly apis: SlackApis) {}

  async needsLogin(connection: Connection): Promise<void> {
    if (!connection.ownerUserId) return;
    await dmNotice(this.apis, connection.teamId, connection.ownerUserId, needsLoginCard(connection));
  }
}

/**
 * Every owner notice over Slack DMs. `connectionEnded` is sent by whoever ended the connection
 * (the admin-revoke handler does); the app does not wire it to every end, as before.
 */
export class SlackOwnerNotices implements OwnerNotices {
  private readonly ready: SlackLoginNotifier;
  private readonly login: SlackNeedsLoginNotifier;
  constructor(private readonly apis: SlackApis) {
    this.ready = new SlackLoginNotifier(apis);
    this.login = new SlackNeedsLoginNotifier(apis);
  }
  connectionReady(session: LoginSession, connection: Connection, service: Service): Promise<void> {
    return this.ready.connectionReady(session, connection, service);
  }
  needsLogin(connection: Connection): Promise<void> {
    return this.login.needsLogin(connection);
  }
  async connectionEnded(connection: Connection, end: ConnectionEnd): Promise<void> {
    if (!connection.ownerUserId) return;
    await dmNotice(
      this.apis,
      connection.teamId,
      connection.ownerUserId,
      end.how === "expired" ? expiredCard(connection) : revokedCard(connection, end.by),
    );
  }
}
