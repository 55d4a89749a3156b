import type { Service } from "../config/registry.js";
import type { LoginNotifier } from "../login/login-service.js";
import type { Connection, LoginSession } from "../store/records.js";
import type { SlackApi } from "./slack-api.js";

/** Tells a user in a DM that their new connection is ready (brief §6: the owner is told). */
export class SlackLoginNotifier implements LoginNotifier {
  constructor(private readonly api: SlackApi) {}

  async connectionReady(session: LoginSession, connection: Connection, service: Service): Promise<void> {
    const dm = await this.api.openDm(session.userId);
    const where = connection.scope === "thread" ? `for the thread in <#${connection.channelId}>` : connection.scope === "user" ? "everywhere you work with the assistant" : "as the shared identity";
    const hours = Math.max(1, Math.round((connection.expiresAt - connection.createdAt) / 3_600_000));
    await this.api.postMessage({
      channel: dm,
      text: `Your ${service.displayName} connection is ready ${where}. It is stored encrypted and expires in about ${hours} hour(s); revoke it any time with /connections.`,
    });
  }
}

/** Tells an owner their connection needs a new login (a refused OAuth refresh). */
export class SlackNeedsLoginNotifier {
  constructor(private readonly api: SlackApi) {}

  async needsLogin(connection: Connection): Promise<void> {
    if (!connection.ownerUserId) return;
    const dm = await this.api.openDm(connection.ownerUserId);
    await this.api.postMessage({
      channel: dm,
      text: `Your ${connection.service} connection stopped working: the service refused to renew its access. Connect it again with /connect ${connection.service} (or ask the assistant to connect it in the thread).`,
    });
  }
}
