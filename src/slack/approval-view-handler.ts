import type { App } from "@slack/bolt";
import { z } from "zod";
import type { ApprovalService } from "../approvals/approval-service.js";
import type { Logger } from "../log/logger.js";
import { approvalArgsView } from "./approval-blocks.js";
import { ACTIONS } from "./blocks.js";
import type { SlackApi } from "./slack-api.js";

/** What the View all arguments button needs. */
export interface ApprovalViewDeps {
  readonly api: SlackApi;
  readonly approvals: Pick<ApprovalService, "viewCard">;
  readonly log: Logger;
}

const buttonValue = z.object({ a: z.string().min(1).max(64), n: z.string().min(1).max(64) }).strict();
const clickBody = z.object({ trigger_id: z.string().min(1).max(256), user: z.object({ id: z.string().min(1).max(32) }).passthrough(), response_url: z.string().url().optional() }).passthrough();

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
  app.action(ACTIONS.viewArgs, async ({ ack, body, action, respond }) => {
    await ack();
    const b = clickBody.safeParse(body);
    let v: z.infer<typeof buttonValue> | undefined;
    try {
      v = buttonValue.parse(JSON.parse((action as { value?: string }).value ?? ""));
    } catch {
      v = undefined;
    }
    if (!b.success) return;
    const seen = v ? await d.approvals.viewCard(v.a, v.n, b.data.user.id) : { kind: "unknown" as const };
    if (seen.kind !== "ok") {
      if (!b.data.response_url) return;
      await respond({ response_type: "ephemeral", replace_original: false, text: REFUSALS[seen.kind] }).catch((err: unknown) => d.log.warn("could not answer a click", { error: (err as Error).message }));
      return;
    }
    const { approval, card } = seen;
    try {
      // The trigger lives about 3 seconds: open the modal before anything slower.
      await d.api.openView(b.data.trigger_id, approvalArgsView(approval, card));
    } catch (err) {
      d.log.warn("could not open the arguments view", { approvalId: approval.id, error: (err as Error).message });
    }
  });
}
