import type { Service } from "../config/registry.js";
import type { Card, CardAction, CardLine, CardSpan, Howto } from "../domain/card.js";
import type { ThreadRef } from "../domain/thread.js";
import type { Connection } from "../store/records.js";

// Consent and the owner notices (ready, needs login, revoked, expired), built from real records.

const t = (text: string): CardSpan => ({ kind: "text", text });
const strong = (text: string): CardSpan => ({ kind: "strong", text });
const code = (text: string): CardSpan => ({ kind: "code", text });
const howto = (h: Howto, service: string): CardSpan => ({ kind: "howto", howto: h, service });

/** What a capture strategy collects, in a user's words. */
export function captureDescription(service: Service): string {
  const c = service.entry.capture;
  switch (c.strategy) {
    case "paste":
      return `an API token you paste into a private page (${c.fields.map((f) => f.label).join(", ")})`;
    case "cookie":
      return `your signed-in browser session for ${service.entry.loginDomains.join(", ") || "the service"} (cookies only)`;
    case "oauth":
      return `an OAuth token for ${service.displayName}${c.scopes.length ? ` with scopes ${c.scopes.join(", ")}` : ""}`;
    case "device":
      // The code itself is never on a card: only the private page opened from it shows it.
      return `an OAuth token for ${service.displayName}${c.device.scopes.length ? ` with scopes ${c.device.scopes.join(", ")}` : ""}, signed in on any device of yours with a one-time code shown only on your private sign-in page`;
  }
}

/**
 * What the consent card offers: `link` (a minted one-time login link to open), `continue` (a
 * button that mints one for the card's user), or `unavailable` (no browser login on this server).
 */
export type ConsentStep =
  | { readonly kind: "link"; readonly url: string }
  | { readonly kind: "continue" }
  | { readonly kind: "unavailable" };

/** The consent card: what connecting captures, where it is kept, its scope and expiry, and the next step. */
export function consentCard(
  service: Service,
  step: ConsentStep,
  opts: { inThread?: boolean; thread?: ThreadRef } = {},
): Card {
  const hours = Math.round(service.ttlMs / 3_600_000);
  const ttl = hours >= 1 ? `${hours} hour(s)` : `${Math.round(service.ttlMs / 60_000)} minute(s)`;
  const actions: CardAction[] =
    step.kind === "link"
      ? [{ id: "open_login", label: "Open private sign-in page", style: "primary", url: step.url }]
      : step.kind === "continue"
        ? [{ id: "continue", label: "Continue", style: "primary" }]
        : [];
  const footer: CardLine | undefined =
    step.kind === "link"
      ? [t("This link works once, for you only, and expires soon. Don't share it.")]
      : step.kind === "unavailable"
        ? [
            t("Browser login is not available on this server yet. An operator can add the connection with "),
            code("slaude-connect connections add"),
            t("."),
          ]
        : undefined;
  return {
    kind: "consent",
    title: [t(`Connect ${service.displayName}`)],
    ...(opts.thread
      ? {
          summary: [
            t(`Connect ${service.displayName} for the thread in `),
            { kind: "channel", channelId: opts.thread.channelId },
          ],
        }
      : {}),
    lines: [
      [strong("What is captured:"), t(` ${captureDescription(service)}`)],
      [strong("Storage:"), t(" encrypted (AES-256-GCM), never shown to the assistant")],
      [
        strong("Scope:"),
        t(
          ` ${opts.inThread === false ? "the thread where you connect it" : "this thread only"}; others there can use it only with your approval`,
        ),
      ],
      [strong("Expires:"), t(` after ${ttl}, or when you revoke it (`), howto("revoke", service.name), t(")")],
    ],
    ...(footer ? { footer } : {}),
    actions,
  };
}

/** Where a connection works, in the owner's words. */
function whereLine(c: Connection): CardLine {
  if (c.scope === "thread") return [t("for the thread in "), { kind: "channel", channelId: c.channelId ?? "" }];
  return [t(c.scope === "user" ? "everywhere you work with the assistant" : "as the shared identity")];
}

/** Tells the owner a new connection is ready (after a login). */
export function connectionReadyCard(connection: Connection, service: Service): Card {
  const hours = Math.max(1, Math.round((connection.expiresAt - connection.createdAt) / 3_600_000));
  return {
    kind: "connection_ready",
    title: [t(`${service.displayName} connected`)],
    lines: [
      [
        t(`Your ${service.displayName} connection is ready `),
        ...whereLine(connection),
        t(`. It is stored encrypted and expires in about ${hours} hour(s); revoke it any time with `),
        howto("revoke", connection.service),
        t("."),
      ],
    ],
    actions: [],
  };
}

/** Tells the owner a connection stopped working (a refused OAuth refresh) and needs a new login. */
export function needsLoginCard(connection: Connection): Card {
  const s = connection.service;
  return {
    kind: "needs_login",
    title: [t(`${s} needs a new login`)],
    lines: [
      [
        t(`Your ${s} connection stopped working: the service refused to renew its access. Connect it again with `),
        howto("connect", s),
        t(" (or ask the assistant to connect it in the thread)."),
      ],
    ],
    actions: [],
  };
}

/** Tells the owner a connection was revoked; `byAdmin` names the admin when it was not the owner. */
export function revokedCard(connection: Connection, byAdmin?: string): Card {
  const s = connection.service;
  const who: CardLine = byAdmin
    ? [t("An admin ("), { kind: "user", userId: byAdmin }, t(`) revoked your ${s} connection.`)]
    : [t(`Your ${s} connection was revoked.`)];
  return {
    kind: "revoked",
    title: [t(`${s} connection revoked`)],
    lines: [
      [
        ...who,
        t(" Its credential was wiped and its grants revoked. Connect again with "),
        howto("connect", s),
        t(" if you still need it."),
      ],
    ],
    actions: [],
  };
}

/** Tells the owner a connection reached its expiry and was wiped. */
export function expiredCard(connection: Connection): Card {
  const s = connection.service;
  return {
    kind: "expired",
    title: [t(`${s} connection expired`)],
    lines: [
      [
        t(`Your ${s} connection expired, so its credential was wiped and its grants revoked. Connect again with `),
        howto("connect", s),
        t(" if you still need it."),
      ],
    ],
    actions: [],
  };
}

/** A consent card once its sign-in finished: what was connected, no button (the link is used). */
export function consentUsedCard(service: Service, connection: Connection): Card {
  return {
    kind: "consent_used",
    title: [t(`${service.displayName} connected`)],
    lines: [
      [
        t(`You signed in and connected ${service.displayName} `),
        ...whereLine(connection),
        t(". This card's sign-in link is used."),
      ],
    ],
    footer: [t("Revoke it any time with "), howto("revoke", service.name), t(".")],
    actions: [],
  };
}
