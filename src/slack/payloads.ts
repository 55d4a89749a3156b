import { z } from "zod";
import { serviceName } from "../config/registry-schema.js";

// What the Slack listeners read from Bolt's payloads, parsed rather than cast. Bolt has verified the
// signature already; these schemas make the fields we act on exactly what we think they are. Slack adds
// fields over time, so unknown keys are dropped (zod's default), never trusted; our own button values
// (JSON we minted) are `.strict()`.

/** A Slack id (user, team, channel): upper-case letters and digits. */
const slackId = z.string().regex(/^[A-Z0-9]{2,32}$/);
/** A message timestamp such as `1700000000.000100`. */
const messageTs = z.string().regex(/^\d{1,12}\.\d{1,9}$/);

/** A button click's envelope (`block_actions`): who clicked, in which workspace, where to answer. */
export const blockActionBody = z.object({
  user: z.object({ id: slackId }),
  // Home-tab and some DM clicks carry no team object; the user's team is then unknown, not guessed.
  team: z.object({ id: slackId }).nullish(),
  response_url: z.string().url().max(2048).optional(),
  trigger_id: z.string().min(1).max(256).optional(),
});
/** The parsed click envelope. */
export type BlockActionBody = z.infer<typeof blockActionBody>;

/**
 * The tenant Bolt authorized a request for (our `authorize` resolved its installation): the team the
 * request came from and its enterprise. Handlers take the team from here, never from the payload.
 */
export const tenantContext = z.object({
  teamId: slackId,
  enterpriseId: slackId.nullish(),
  installationId: z.string().min(1).max(64),
});
/** The parsed tenant of a request. */
export type TenantContext = z.infer<typeof tenantContext>;

/** The clicked button: its action id and the value we put on it (absent on link buttons). */
export const buttonAction = z.object({ action_id: z.string().min(1).max(255), value: z.string().max(2000).optional() });

/** A slash command's fields the handlers use. */
export const slashCommand = z.object({
  text: z.string().max(4000),
  user_id: slackId,
  channel_id: slackId,
  team_id: slackId,
});

/** The Events API envelope around an event: which workspace, and the id Slack retries it under. */
export const eventEnvelope = z.object({ team_id: slackId.optional(), event_id: z.string().min(1).max(64).optional() });

/** A `message` event, as far as turns and secret detection read it. */
export const messageEvent = z.object({
  subtype: z.string().max(64).optional(),
  bot_id: z.string().max(64).optional(),
  user: slackId.optional(),
  text: z.string().max(100_000).optional(),
  channel: slackId,
  ts: messageTs,
  thread_ts: messageTs.optional(),
});

/** `app_home_opened`: whose Home tab, and which tab. */
export const homeOpenedEvent = z.object({ user: slackId, tab: z.string().max(32).optional() });

/** `member_joined_channel` / `member_left_channel`: the channel whose cached membership is stale. */
export const memberChangeEvent = z.object({ channel: slackId });

/** The value of an approval button (Allow for thread, Just once, Deny, View all arguments). */
export const approvalValue = z.object({ a: z.string().min(1).max(64), n: z.string().min(1).max(64) }).strict();

/** The value of the consent card's Continue button: who may accept, for which service and thread. */
export const consentAcceptValue = z
  .object({
    u: z.string().regex(/^[UW][A-Z0-9]{2,30}$/),
    s: z.string().min(1).max(64),
    c: z.string().max(64).nullable(),
    t: z.string().max(32).nullable(),
  })
  .strict();

/** The value of a tool-pin button (Accept / Reject): team, service, tool and the hash of the definition shown. */
export const pinValue = z
  .object({ t: slackId, s: serviceName, n: z.string().min(1).max(256), h: z.string().regex(/^[0-9a-f]{64}$/) })
  .strict();

/** The value of a revoke button: a connection or grant id. */
export const idValue = z.string().regex(/^(conn|grant)_[A-Za-z0-9_-]{8,40}$/);

/** Parses a button value that carries JSON we minted; anything else (forged, corrupted) is undefined. */
export function parseJsonValue<T>(schema: z.ZodType<T>, raw: string | undefined): T | undefined {
  if (raw === undefined) return undefined;
  try {
    const r = schema.safeParse(JSON.parse(raw));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}
