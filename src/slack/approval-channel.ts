import type { ApprovalCard } from "../approvals/card.js";
import type { ApprovalChannel, ApprovalOutcome } from "../approvals/channel.js";
import { approvalCard, approvalSettledCard } from "../cards/approval-cards.js";
import { errorMessage } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";
import type { Approval } from "../store/records.js";
import type { Store } from "../store/store.js";
import { approvalCardBlocks } from "./approval-blocks.js";
import { approvalSettledBlocks, threadNoteText } from "./blocks.js";
import { notificationText } from "./card-mrkdwn.js";
import type { SlackApis } from "./tenant-api.js";

/**
 * The approval port over Slack: a DM card to the owner with Allow for thread / Just once / Deny,
 * a note to the borrower in the thread, and both updated with the outcome.
 */
export class SlackApprovalChannel implements ApprovalChannel {
  readonly available = true;

  constructor(
    private readonly apis: SlackApis,
    private readonly store: Store,
    private readonly log: Logger,
    private readonly timeoutMs: number,
  ) {}

  async ask(approval: Approval, card: ApprovalCard): Promise<void> {
    // If the owner cannot be reached, this throws and the borrow is refused (fail closed).
    const api = await this.apis.forTeam(approval.teamId);
    const dm = await api.openDm(approval.ownerUserId);
    const posted = await api.postMessage({
      channel: dm,
      text: notificationText(approvalCard(card)),
      blocks: approvalCardBlocks(approval, card),
    });
    await this.store.approvals.setCard(approval.id, posted.channel, posted.ts);
    try {
      await api.postMessage({
        channel: approval.channelId,
        threadTs: approval.threadTs,
        text: threadNoteText(approval, "asked", this.timeoutMs),
      });
    } catch (err) {
      // The owner has the card; a missing thread note is worth a log line, not a refusal.
      this.log.warn("could not post the waiting note in the thread", {
        approvalId: approval.id,
        error: errorMessage(err),
      });
    }
  }

  async settled(approval: Approval, outcome: ApprovalOutcome): Promise<void> {
    const row = (await this.store.approvals.get(approval.id)) ?? approval;
    const api = await this.apis.forTeam(row.teamId);
    if (row.cardChannel && row.cardTs) {
      await api.updateMessage({
        channel: row.cardChannel,
        ts: row.cardTs,
        text: notificationText(approvalSettledCard(row, outcome)),
        blocks: approvalSettledBlocks(row, outcome),
      });
    }
    await api.postMessage({ channel: row.channelId, threadTs: row.threadTs, text: threadNoteText(row, outcome) });
  }
}
