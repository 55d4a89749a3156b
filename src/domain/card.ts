import type { ThreadRef } from "./thread.js";

// One card model for everything the product tells a person on a card (approval, consent, ready,
// needs-login, revoked, expired, settled). Builders in this folder fill it from real records;
// renderers (Block Kit in src/slack, HTML in the console) only arrange it. A renderer never
// decides what a card says or which answers it offers.

/** The JSON type of an argument value, shown next to it so `"2"` and `2` cannot be confused. */
export type ArgumentType = "string" | "number" | "boolean" | "null" | "array" | "object";

/** One top-level argument exactly as the vendor will receive it. */
export interface CardArgument {
  /** The argument's name; a JSON string literal when `escaped`. */
  readonly name: string;
  readonly type: ArgumentType;
  /** A string verbatim; anything else as indented JSON; a JSON literal with `\u` escapes when `escaped`. */
  readonly text: string;
  /** Invisible, control or bidi characters were written as `\uXXXX` escapes (exact, but unambiguous). */
  readonly escaped: boolean;
  /** The owner's credential appeared in it and was replaced by `[redacted]`: not what would run. */
  readonly redacted: boolean;
}

/**
 * Whether the card shows every argument exactly: `complete`; `redacted` (an argument holds the
 * owner's credential, hidden); `too_large` (over the card limits, values not shown).
 */
export type CardArguments =
  | { readonly shown: "complete"; readonly args: readonly CardArgument[]; readonly chars: number }
  | { readonly shown: "redacted"; readonly args: readonly CardArgument[]; readonly chars: number }
  | { readonly shown: "too_large"; readonly count: number; readonly chars: number };

/**
 * A piece of a card's text. Semantic, not formatted: each renderer writes a user as a mention or a
 * name, a thread as a link, a date in the reader's time zone; text is always inert (escaped).
 */
export type CardSpan =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "strong"; readonly text: string }
  | { readonly kind: "code"; readonly text: string }
  | { readonly kind: "user"; readonly userId: string }
  | { readonly kind: "channel"; readonly channelId: string }
  | { readonly kind: "thread"; readonly thread: ThreadRef; readonly text: string }
  | { readonly kind: "date"; readonly at: number }
  | { readonly kind: "howto"; readonly howto: Howto; readonly service: string };

/** Where a person does something: Slack says the slash command, the console names its tab. */
export type Howto = "revoke" | "connect";

/** Where a card is read; each surface names the controls that exist there. */
export type Surface = "slack" | "console";

/** How `surface` tells a person to revoke or connect `service` (used after "with"). */
export function howtoText(howto: Howto, service: string, surface: Surface): string {
  if (surface === "slack") return howto === "revoke" ? "/connections" : `/connect ${service}`;
  return howto === "revoke" ? "the Connections tab" : "the Connect button of Play a thread";
}

/** One line of a card: spans read left to right. */
export type CardLine = readonly CardSpan[];

/** What a card is about. */
export type CardKind =
  | "approval"
  | "approval_settled"
  | "consent"
  | "consent_used"
  | "connection_ready"
  | "needs_login"
  | "revoked"
  | "expired";

/**
 * A button. Approval answers carry the decision as their id; `continue` mints a login link (Slack
 * sends the click; the console asks the server); `open_login` opens `url` (a one-time login link).
 */
export type CardActionId = "allowed_thread" | "allowed_once" | "denied" | "continue" | "open_login";

/** One button on a card: `url` only for `open_login`. */
export interface CardAction {
  readonly id: CardActionId;
  readonly label: string;
  readonly style?: "primary" | "danger";
  readonly url?: string;
}

/** What a card says and offers, built once from the real records and rendered by every channel. */
export interface Card {
  readonly kind: CardKind;
  /** The heading (Slack: the notification text, and a bold first line on a consent card). */
  readonly title: CardLine;
  /** Slack's notification text when it differs from the title. */
  readonly summary?: CardLine;
  /** The facts, in order. */
  readonly lines: readonly CardLine[];
  /** The tool an approval card is about, and whether it changes data. */
  readonly tool?: { readonly name: string; readonly write: boolean };
  /** Every argument exactly as the vendor will receive it (approval cards only). */
  readonly args?: CardArguments;
  /** A warning (why a card offers only Deny). */
  readonly notice?: CardLine;
  /** Small print under the facts (expiry, how to revoke, link rules). */
  readonly footer?: CardLine;
  readonly actions: readonly CardAction[];
}

/** A card's text with people and places written by `names` (default: their ids), for facts and plain renderers. */
export function plainLine(
  line: CardLine,
  names: (id: string) => string = (id) => id,
  surface: Surface = "slack",
): string {
  return line.map((s) => plainSpan(s, names, surface)).join("");
}

/** One span as plain text; the switch is exhaustive, so a new span kind fails the typecheck here. */
function plainSpan(s: CardSpan, names: (id: string) => string, surface: Surface): string {
  switch (s.kind) {
    case "text":
    case "strong":
    case "code":
    case "thread":
      return s.text;
    case "user":
      return `@${names(s.userId)}`;
    case "channel":
      return `#${names(s.channelId)}`;
    case "date":
      return new Date(s.at).toISOString();
    case "howto":
      return howtoText(s.howto, s.service, surface);
  }
}

/** What a card says, flattened: every renderer must show each of these (the two-renderer test compares them). */
export interface CardFactList {
  readonly title: string;
  readonly lines: readonly string[];
  readonly tool?: string;
  /** Each argument as [name, value text] exactly as the vendor receives it; empty when not shown. */
  readonly args: readonly (readonly [string, string])[];
  readonly notice?: string;
  readonly footer?: string;
  /** Button labels, in order. */
  readonly actions: readonly string[];
}

/** Lists what `card` says (title, lines, every argument name and value, button labels). */
export function cardFactList(card: Card, names?: (id: string) => string, surface: Surface = "slack"): CardFactList {
  const args = card.args && card.args.shown !== "too_large" ? card.args.args.map((a) => [a.name, a.text] as const) : [];
  return {
    title: plainLine(card.title, names, surface),
    lines: card.lines.map((l) => plainLine(l, names, surface)),
    ...(card.tool ? { tool: card.tool.name } : {}),
    args,
    ...(card.notice ? { notice: plainLine(card.notice, names, surface) } : {}),
    ...(card.footer ? { footer: plainLine(card.footer, names, surface) } : {}),
    actions: card.actions.map((a) => a.label),
  };
}
