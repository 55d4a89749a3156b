import type { RespondFn } from "@slack/bolt";
import { errorMessage } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";
import { type BlockActionBody, blockActionBody, buttonAction, tenantContext } from "./payloads.js";

/** A parsed button click: who clicked where, the button, and the team whose installation Bolt authorized it for. */
export interface Click {
  readonly body: BlockActionBody;
  readonly action: { readonly action_id: string; readonly value?: string | undefined };
  readonly teamId: string;
}

/** The click's envelope, button and tenant, parsed; a payload that does not fit is logged and ignored (nothing acted on). */
export function parseClick(body: unknown, action: unknown, log: Logger, context: unknown): Click | undefined {
  const b = blockActionBody.safeParse(body);
  const a = buttonAction.safeParse(action);
  const t = tenantContext.safeParse(context);
  if (b.success && a.success && t.success) return { body: b.data, action: a.data, teamId: t.data.teamId };
  log.warn("ignored a malformed Slack click", {
    issues: [
      ...(b.error?.issues ?? []),
      ...(a.error?.issues ?? []),
      ...(t.error?.issues ?? []).map((i) => ({ path: ["context", ...i.path] })),
    ]
      .map((i) => i.path.join("."))
      .join(",")
      .slice(0, 200),
  });
  return undefined;
}

/** Answers a click privately; Home-tab clicks carry no response_url, so there is nothing to answer into. */
export async function reply(respond: RespondFn, body: BlockActionBody, text: string, log: Logger): Promise<void> {
  if (!body.response_url) return;
  try {
    await respond({ response_type: "ephemeral", replace_original: false, text });
  } catch (err) {
    log.warn("could not answer a click", { error: errorMessage(err) });
  }
}
