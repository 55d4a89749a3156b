import { consentCard } from "../../cards/notice-cards.js";
import type { Clock } from "../../clock/clock.js";
import type { ServiceRegistry } from "../../config/registry.js";
import type { Card } from "../../domain/card.js";
import { errorMessage } from "../../domain/errors.js";
import type { Logger } from "../../log/logger.js";
import type { LoginService } from "../../login/login-service.js";
import type { Store } from "../../store/store.js";

// Continue on a local consent card, as the Slack button does: only the card's own user may press
// it (anyone else is refused and audited), and the card is replaced by one carrying a one-time link.

/** What the workspace needs from the login service: minting one-time links. */
export type LinkMinter = Pick<LoginService, "mint">;

/** The link to open, or why there is none. */
export type ConsentContinuation = { url: string } | { refused: "not_yours" | "unknown_item" | "unavailable" };

/** What the Continue press reads and writes; `logins` is unset until the login service is bound. */
export interface ConsentContinueDeps {
  readonly store: Store;
  readonly clock: Clock;
  readonly log: Logger;
  readonly registry: ServiceRegistry;
  readonly teamId: string;
  readonly logins: LinkMinter | undefined;
  /** Replaces the card of an inbox item (still open: its link is yet to be used). */
  readonly replaceCard: (id: string, card: Card) => Promise<void>;
}

/** Mints the card user's login link for the card's service and thread; refuses every other presser. */
export async function continueConsent(
  deps: ConsentContinueDeps,
  itemId: string,
  asUserId: string,
): Promise<ConsentContinuation> {
  const item = await deps.store.workspace.getInbox(itemId);
  if (!item || item.teamId !== deps.teamId || item.card.kind !== "consent" || !item.subject)
    return { refused: "unknown_item" };
  if (item.userId !== asUserId) {
    await deps.store.audit.append([
      {
        at: deps.clock.now(),
        event: "login_refused",
        teamId: deps.teamId,
        callerUserId: asUserId,
        decision: "consent_not_yours",
        service: item.subject.service,
      },
    ]);
    return { refused: "not_yours" };
  }
  const service = deps.registry.get(item.subject.service);
  if (!service || !deps.logins) return { refused: "unavailable" };
  const { channelId, threadTs } = item.subject;
  try {
    const link = await deps.logins.mint({
      teamId: deps.teamId,
      userId: asUserId,
      service: service.name,
      channelId,
      threadTs,
      ...(threadTs ? {} : { scope: service.entry.scopes.includes("user") ? ("user" as const) : ("thread" as const) }),
    });
    // As in Slack, the card is replaced by one carrying the link (works once, for this user).
    await deps.replaceCard(
      item.id,
      consentCard(service, { kind: "link", url: link.url }, { inThread: Boolean(threadTs) }),
    );
    return { url: link.url };
  } catch (err) {
    deps.log.warn("could not mint a login link", { service: service.name, error: errorMessage(err) });
    return { refused: "unavailable" };
  }
}
