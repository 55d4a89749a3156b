import type { Redactor } from "../hygiene/redact.js";

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
  /** Top-level argument names and their values, truncated and redacted. */
  readonly keyArgs: readonly (readonly [string, string])[];
  readonly teamId: string;
  readonly channelId: string;
  readonly threadTs: string;
  readonly expiresAt: number;
}

const SECRETISH_KEY = /pass(word)?|secret|token|api[_-]?key|authorization|cookie|credential|private[_-]?key/i;
const MAX_ARGS = 8;
const MAX_VALUE = 120;

/** Renders the key arguments of a call for a card: at most 8, each value cut to 120 characters, secrets hidden. */
export function renderKeyArgs(args: Record<string, unknown>, redactor: Redactor): [string, string][] {
  const out: [string, string][] = [];
  for (const [k, v] of Object.entries(args).slice(0, MAX_ARGS)) {
    if (SECRETISH_KEY.test(k)) {
      out.push([k, "[hidden]"]);
      continue;
    }
    let text = typeof v === "string" ? v : JSON.stringify(v) ?? "null";
    text = redactor.text(text).replace(/\s+/g, " ");
    out.push([k, text.length > MAX_VALUE ? text.slice(0, MAX_VALUE - 1) + "…" : text]);
  }
  const more = Object.keys(args).length - MAX_ARGS;
  if (more > 0) out.push(["…", `${more} more argument(s)`]);
  return out;
}
