import type { ConsentNotifier } from "../broker/ports.js";
import { consentCard } from "../cards/notice-cards.js";
import type { ServiceRegistry } from "../config/registry.js";
import { ConnectionError } from "../connections/errors.js";
import type { ThreadRef } from "../domain/thread.js";
import { consentCardBlocks, consentValue } from "./blocks.js";
import { notificationText } from "./card-mrkdwn.js";
import type { SlackApis } from "./tenant-api.js";

/**
 * Sends the consent card for `connect` to the user privately (a DM), never into the thread. Its
 * Continue button mints the login link (the app always runs a login service beside Slack).
 */
export class SlackConsent implements ConsentNotifier {
  constructor(
    private readonly apis: SlackApis,
    private readonly registry: ServiceRegistry,
  ) {}

  async sendConsent(thread: ThreadRef, userId: string, serviceName: string): Promise<void> {
    const service = this.registry.get(serviceName);
    if (!service) throw new ConnectionError("unknown_service", `unknown service ${serviceName}`);
    const api = await this.apis.forTeam(thread.teamId);
    const dm = await api.openDm(userId);
    const card = consentCard(service, { kind: "continue" }, { thread });
    await api.postMessage({
      channel: dm,
      text: notificationText(card),
      blocks: consentCardBlocks(
        card,
        consentValue({ userId, service: serviceName, channelId: thread.channelId, threadTs: thread.threadTs }),
      ),
    });
  }
}
