import type { App, RespondFn } from "@slack/bolt";
import type { Clock } from "../clock/clock.js";
import { errorMessage } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";
import { doneSentence, type PinReview, refusalSentence } from "../pinning/review.js";
import type { Store } from "../store/store.js";
import { parseClick, reply } from "./clicks.js";
import { type HomeDeps, publishHome } from "./home.js";
import { type BlockActionBody, parseJsonValue, pinValue } from "./payloads.js";
import { PIN_ACTIONS } from "./pin-blocks.js";

/** What the pin buttons need: the admin-checked review (PinService behind it) and the Home to redraw. */
export interface PinHandlerDeps extends HomeDeps {
  readonly review: PinReview;
  readonly store: Store;
  readonly clock: Clock;
  readonly log: Logger;
}

/** Answers the clicker: in place when the click came from a message, else (the Home tab has no response_url) by DM. */
async function tell(
  d: PinHandlerDeps,
  respond: RespondFn,
  body: BlockActionBody,
  teamId: string,
  text: string,
): Promise<void> {
  if (body.response_url) return reply(respond, body, text, d.log);
  try {
    const api = await d.apis.forTeam(teamId);
    await api.postMessage({ channel: await api.openDm(body.user.id), text });
  } catch (err) {
    d.log.warn("could not tell an admin how a tool decision went", { error: errorMessage(err) });
  }
}

/**
 * Registers Accept / Reject of the App Home's tool-change list. Bolt has verified the signature;
 * the clicker is re-checked as an admin on every click (PinReview), whatever the button says, and
 * the decision is bound to the hash on the button, so only the definition shown can be accepted.
 */
export function registerPinHandlers(app: App, d: PinHandlerDeps): void {
  app.action(
    new RegExp(`^(${PIN_ACTIONS.accept}|${PIN_ACTIONS.reject})$`),
    async ({ ack, body: rawBody, action: rawAction, respond, context }) => {
      await ack();
      const click = parseClick(rawBody, rawAction, d.log, context);
      if (!click) return;
      const { body, action, teamId } = click;
      const v = parseJsonValue(pinValue, action.value);
      // A button minted for one workspace is never applied in another.
      if (!v || teamId !== v.t) {
        await d.store.audit.append([
          { at: d.clock.now(), event: "tool_pin", teamId, decision: "click_invalid", actor: body.user.id },
        ]);
        await tell(d, respond, body, teamId, "This button is not valid.");
        return;
      }
      const decision = {
        kind: action.action_id === PIN_ACTIONS.accept ? ("accept" as const) : ("reject" as const),
        service: v.s,
        tool: v.n,
        hash: v.h,
      };
      const r = await d.review.decide(v.t, body.user.id, decision);
      await tell(
        d,
        respond,
        body,
        teamId,
        r.kind === "done" ? doneSentence(decision) : refusalSentence(r.kind === "not_admin" ? "not_admin" : r.reason),
      );
      // The Home tab has no response_url: redrawing it is how the clicker sees the outcome.
      await publishHome(d, v.t, body.user.id).catch((err: unknown) =>
        d.log.warn("could not republish the App Home", { error: errorMessage(err) }),
      );
    },
  );
}
