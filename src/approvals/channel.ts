import type { Approval } from "../store/records.js";
import type { ApprovalCard } from "./card.js";

/** How an approval ended, as the channel shows it. */
export type ApprovalOutcome = "allowed_thread" | "allowed_once" | "denied" | "expired";

/**
 * The approval port: how an owner is asked (a Slack DM card in production). The core never
 * knows about Slack; the Slack adapter implements this and calls ApprovalService.decide on a click.
 */
export interface ApprovalChannel {
  /** Whether owners can be asked at all; when false every borrow that needs asking is refused. */
  readonly available: boolean;
  /** Shows the card to the owner and tells the borrower in the thread. Throws if the owner cannot be reached. */
  ask(approval: Approval, card: ApprovalCard): Promise<void>;
  /** Updates the card and the thread with the outcome. */
  settled(approval: Approval, outcome: ApprovalOutcome): Promise<void>;
}

/** The channel used when no approval channel (Slack) is configured: nobody can be asked. */
export const noApprovalChannel: ApprovalChannel = {
  available: false,
  ask: async () => {
    throw new Error("no approval channel configured");
  },
  settled: async () => {},
};
