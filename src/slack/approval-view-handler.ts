import type { App } from "@slack/bolt";
import type { ApprovalService } from "../approvals/approval-service.js";
import { errorMessage } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";
import { approvalArgsView } from "./approval-blocks.js";
import { ACTIONS } from "./blocks.js";
import { parseClick } from "./clicks.js";
import { approvalValue, parseJsonValue } from "./payloads.js";
import type { SlackApis } from "./tenant-api.js";

/** What the View all arguments button needs. */
export interface ApprovalViewDeps {
  readonly apis: SlackApis;
  readonly approvals: Pick<ApprovalService, "viewCard">;
  readonly log: Logger;
}

const REFUSALS = {
  not_owner: "Only the account owner can see this request's arguments.",
  unknown: "This request is not valid.",
  not_pending: "This request is no longer waiting for an answer.",
} as const;

/**
 * Registers the View all arguments button: opens a modal with every argument of a pending card,
 * for the approval's owner only (its nonce must match); anyone else gets a private refusal.
 */
export function registerApprovalViewHandler(app: App, d: ApprovalViewDeps): void {
  app.action(ACTIONS.viewArgs, async ({ ack, body, action, respond, context }) => {
    await ack();
    const click = parseClick(body, action, d.log, context);
    // Without a trigger id no modal can open: nothing to do.
    const triggerId = click?.body.trigger_id;
    if (!click || triggerId === undefined) return;
    const v = parseJsonValue(approvalValue, click.action.value);
    const seen = v ? await d.approvals.viewCard(v.a, v.n, click.body.user.id) : { kind: "unknown" as const };
    if (seen.kind !== "ok") {
      if (!click.body.response_url) return;
      await respond({ response_type: "ephemeral", replace_original: false, text: REFUSALS[seen.kind] }).catch(
        (err: unknown) => d.log.warn("could not answer a click", { error: errorMessage(err) }),
      );
      return;
    }
    const { approval, card } = seen;
    try {
      // The trigger lives about 3 seconds: open the modal before anything slower.
      await (await d.apis.forTeam(click.teamId)).openView(triggerId, approvalArgsView(approval, card));
    } catch (err) {
      d.log.warn("could not open the arguments view", { approvalId: approval.id, error: errorMessage(err) });
    }
  });
}
