import { z } from "zod";
import type { Card } from "./card.js";

// The card model as a strict zod schema: a card read back from the store (or any other edge) is
// parsed, never cast. Kept beside the type; the `satisfies` below keeps the two in step.

const thread = z.object({ teamId: z.string(), channelId: z.string(), threadTs: z.string() }).strict();

const span = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("text"), text: z.string() }).strict(),
  z.object({ kind: z.literal("strong"), text: z.string() }).strict(),
  z.object({ kind: z.literal("code"), text: z.string() }).strict(),
  z.object({ kind: z.literal("user"), userId: z.string() }).strict(),
  z.object({ kind: z.literal("channel"), channelId: z.string() }).strict(),
  z.object({ kind: z.literal("thread"), thread, text: z.string() }).strict(),
  z.object({ kind: z.literal("date"), at: z.number() }).strict(),
  z.object({ kind: z.literal("howto"), howto: z.enum(["revoke", "connect"]), service: z.string() }).strict(),
]);
const line = z.array(span);

const argument = z
  .object({
    name: z.string(),
    type: z.enum(["string", "number", "boolean", "null", "array", "object"]),
    text: z.string(),
    escaped: z.boolean(),
    redacted: z.boolean(),
  })
  .strict();
const args = z.discriminatedUnion("shown", [
  z.object({ shown: z.literal("complete"), args: z.array(argument), chars: z.number() }).strict(),
  z.object({ shown: z.literal("redacted"), args: z.array(argument), chars: z.number() }).strict(),
  z.object({ shown: z.literal("too_large"), count: z.number(), chars: z.number() }).strict(),
]);

const action = z
  .object({
    id: z.enum(["allowed_thread", "allowed_once", "denied", "continue", "open_login"]),
    label: z.string(),
    style: z.enum(["primary", "danger"]).optional(),
    url: z.string().optional(),
  })
  .strict();

/** A card, strictly: unknown fields and kinds are refused. */
export const cardSchema = z
  .object({
    kind: z.enum([
      "approval",
      "approval_settled",
      "consent",
      "consent_used",
      "connection_ready",
      "needs_login",
      "revoked",
      "expired",
    ]),
    title: line,
    summary: line.optional(),
    lines: z.array(line),
    tool: z.object({ name: z.string(), write: z.boolean() }).strict().optional(),
    args: args.optional(),
    notice: line.optional(),
    footer: line.optional(),
    actions: z.array(action),
  })
  .strict();

/** Parses a card from untrusted JSON; undefined when it is not one. */
export function parseCard(json: string): Card | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch {
    return undefined;
  }
  const r = cardSchema.safeParse(doc);
  if (!r.success) return undefined;
  // Optional fields are left out rather than set to undefined (exactOptionalPropertyTypes).
  const { summary, tool, args: a, notice, footer, ...rest } = r.data;
  const actions = rest.actions.map(({ style, url, ...b }) => ({
    ...b,
    ...(style ? { style } : {}),
    ...(url !== undefined ? { url } : {}),
  }));
  return {
    ...rest,
    actions,
    ...(summary ? { summary } : {}),
    ...(tool ? { tool } : {}),
    ...(a ? { args: a } : {}),
    ...(notice ? { notice } : {}),
    ...(footer ? { footer } : {}),
  } satisfies Card;
}
