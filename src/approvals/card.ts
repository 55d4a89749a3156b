import type { ArgumentType, CardArgument, CardArguments } from "../domain/card.js";
import type { Redactor } from "../hygiene/redact.js";

export type { ArgumentType, CardArgument, CardArguments } from "../domain/card.js";

// The approval card's facts, built once from the real call and rendered by each channel (Block Kit
// for Slack, HTML for a local console): no renderer decides what the owner is shown or may answer.

/** An owner's answer to an approval card. */
export type ApprovalDecision = "allowed_thread" | "allowed_once" | "denied";

/** What the owner sees on an approval card, rendered from the real call, never from model text. */
export interface ApprovalCard {
  readonly borrowerUserId: string;
  readonly ownerUserId: string;
  readonly service: string;
  readonly serviceDisplayName: string;
  readonly tool: string;
  readonly write: boolean;
  /** The reason the owner is asked: no grant yet, or a write call that always asks. */
  readonly reason: "no_grant" | "write_under_grant";
  /** Every argument as (name, shown text), in call order; empty when `args.shown` is `too_large`. */
  readonly keyArgs: readonly (readonly [string, string])[];
  /** Every argument with its type and how it is shown, and whether the card can show them all. */
  readonly args: CardArguments;
  /** The answers the card offers: only `denied` unless every argument is shown exactly. */
  readonly decisions: readonly ApprovalDecision[];
  readonly teamId: string;
  readonly channelId: string;
  readonly threadTs: string;
  readonly expiresAt: number;
}

/**
 * Card limits, shared by every renderer so all show the same facts. Chosen to fit the smallest
 * one, a Slack modal (100 blocks; values split into 2,900-character code blocks).
 */
export const CARD_LIMITS = { maxArgs: 80, maxChars: 24_000 } as const;

// Characters a reader cannot see or that reorder text (controls, format/bidi, separators,
// surrogates, private use, unassigned); newline and tab are kept as they are.
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}]/u;
const INVISIBLE_ALL = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}]/gu;

function hasInvisible(s: string): boolean {
  return INVISIBLE.test(s.replace(/[\n\t]/g, ""));
}

// `\uXXXX` per UTF-16 unit: valid inside a JSON string literal, so the text stays exact JSON. A
// literal newline or tab in JSON text is layout (JSON.stringify escapes them inside strings).
function escapeInvisible(jsonText: string): string {
  return jsonText.replace(INVISIBLE_ALL, (c) =>
    c === "\n" || c === "\t"
      ? c
      : [...Array(c.length).keys()]
          .map((i) => `\\u${c.charCodeAt(i).toString(16).toUpperCase().padStart(4, "0")}`)
          .join(""),
  );
}

function typeOf(v: unknown): ArgumentType {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  const t = typeof v;
  return t === "string" || t === "number" || t === "boolean" ? t : "object";
}

/** A name or string value: verbatim when plainly readable, else an escaped JSON literal. */
function showString(s: string): { text: string; escaped: boolean } {
  return hasInvisible(s) ? { text: escapeInvisible(JSON.stringify(s)), escaped: true } : { text: s, escaped: false };
}

// Indentation grows with depth (quadratic text for deep nesting), so only shallow, card-sized
// values are indented; the rest are shown as compact JSON, which is just as exact.
const INDENT_MAX_DEPTH = 16;

function depthOf(json: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "[" || c === "{") max = Math.max(max, ++depth);
    else if (c === "]" || c === "}") depth--;
  }
  return max;
}

function showValue(v: unknown): { text: string; escaped: boolean } {
  if (typeof v === "string") return showString(v);
  const compact = JSON.stringify(v) ?? "null";
  const json =
    compact.length <= CARD_LIMITS.maxChars && depthOf(compact) <= INDENT_MAX_DEPTH
      ? JSON.stringify(v, null, 2)
      : compact;
  const text = escapeInvisible(json);
  return { text, escaped: text !== json };
}

/**
 * Builds the card's view of a call's arguments: every one exactly, the owner's credential
 * redacted (which makes the card Deny-only), or, past {@link CARD_LIMITS}, only their size.
 */
export function cardArguments(args: Record<string, unknown>, redactor: Redactor): CardArguments {
  const entries = Object.entries(args);
  let chars = 0;
  const out: CardArgument[] = [];
  for (const [k, v] of entries) {
    const name = showString(k);
    const value = showValue(v);
    chars += name.text.length + value.text.length;
    if (out.length >= CARD_LIMITS.maxArgs || chars > CARD_LIMITS.maxChars) continue;
    const shownName = redactor.text(name.text);
    const shownText = redactor.text(value.text);
    out.push({
      name: shownName,
      type: typeOf(v),
      text: shownText,
      escaped: name.escaped || value.escaped,
      redacted: shownName !== name.text || shownText !== value.text,
    });
  }
  if (entries.length > CARD_LIMITS.maxArgs || chars > CARD_LIMITS.maxChars)
    return { shown: "too_large", count: entries.length, chars };
  return { shown: out.some((a) => a.redacted) ? "redacted" : "complete", args: out, chars };
}

/** The answers a card may offer: Deny only unless every argument is shown exactly; a write never grants the thread. */
export function cardDecisions(args: CardArguments, write: boolean): ApprovalDecision[] {
  if (args.shown !== "complete") return ["denied"];
  return write ? ["allowed_once", "denied"] : ["allowed_thread", "allowed_once", "denied"];
}

/** The argument facts of a card (`args`, `keyArgs`, `decisions`) for a call. */
export function cardFacts(
  args: Record<string, unknown>,
  redactor: Redactor,
  write: boolean,
): Pick<ApprovalCard, "args" | "keyArgs" | "decisions"> {
  const a = cardArguments(args, redactor);
  return {
    args: a,
    keyArgs: a.shown === "too_large" ? [] : a.args.map((x) => [x.name, x.text] as const),
    decisions: cardDecisions(a, write),
  };
}
