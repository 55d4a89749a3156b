import { z } from "zod";
import type { Broker } from "../broker/broker.js";
import { TURN_ID_PATTERN } from "../turns/turn-state.js";
import { type OriginGuard, readBody } from "./host-auth.js";
import { guardHostRequest } from "./host-guard.js";
import type { HostTeamAuth } from "./host-teams.js";
import { type RouteHandler, sendJson } from "./http-server.js";
import { idPart } from "./mcp-endpoint.js";
import { sendRefusal, type TenantGuard } from "./tenant-guard.js";

// The host's turn reports: POST /v1/turns starts a turn and answers its id in the X-Slaude-Turn
// header; POST /v1/turns/end ends an explicit one. A host token reports only in its own tenant's
// threads (403 otherwise, nothing recorded). The rules are in docs/host-integration.md.

/** What both turn routes check a request with: the host token, its tenant, and the clock. */
export interface TurnRouteDeps {
  readonly auth: HostTeamAuth;
  readonly origin: OriginGuard;
  readonly tenants: TenantGuard;
  readonly now: () => number;
}

const turnBody = z
  .object({
    team_id: idPart,
    channel_id: idPart,
    thread_ts: z.string().regex(/^\d{1,12}\.\d{1,8}$/),
    user_id: z.string().regex(/^[UW][A-Z0-9]{2,30}$/),
    /** The turn stays live until POST /v1/turns/end (or SLAUDE_TURN_MAX_SECONDS), overlapping later ones. */
    explicit_end: z.boolean().optional(),
  })
  .strict();

const endBody = z
  .object({ turn_id: z.string().regex(TURN_ID_PATTERN, "a turn id returned by POST /v1/turns") })
  .strict();

/** Reads and strictly parses a small JSON body, answering 400 itself when it is not acceptable. */
async function parseBody<T>(
  req: Parameters<RouteHandler>[0],
  res: Parameters<RouteHandler>[1],
  schema: z.ZodType<T>,
): Promise<T | undefined> {
  let doc: unknown;
  try {
    doc = JSON.parse(await readBody(req, 16 << 10));
  } catch {
    sendJson(res, 400, { error: "invalid_json" });
    return undefined;
  }
  const parsed = schema.safeParse(doc);
  if (parsed.success) return parsed.data;
  sendJson(res, 400, {
    error: "invalid_turn",
    issues: parsed.error.issues.map((i) => `${i.path.join(".") || "(body)"}: ${i.message}`),
  });
  return undefined;
}

/** POST /v1/turns: the host reports whose turn it is in a thread; 204 with the turn id in `X-Slaude-Turn`. */
export function turnsHandler(broker: Broker, d: TurnRouteDeps): RouteHandler {
  return async (req, res) => {
    const caller = guardHostRequest(req, res, d.auth, d.origin);
    if (!caller) return;
    const t = await parseBody(req, res, turnBody);
    if (!t) return;
    const verdict = await d.tenants.check(caller.binding, t.team_id);
    if (!verdict.ok) return sendRefusal(res, verdict.reason, t.team_id);
    const turn = await broker.turns.set(
      { teamId: t.team_id, channelId: t.channel_id, threadTs: t.thread_ts },
      t.user_id,
      d.now(),
      { explicit: t.explicit_end === true },
    );
    res.writeHead(204, { "x-slaude-turn": turn.id, "cache-control": "no-store" }).end();
  };
}

/** POST /v1/turns/end: ends a turn; 204 when it was live, 404 when unknown, ended or superseded. */
export function turnEndHandler(broker: Broker, d: TurnRouteDeps): RouteHandler {
  return async (req, res) => {
    const caller = guardHostRequest(req, res, d.auth, d.origin);
    if (!caller) return;
    const b = await parseBody(req, res, endBody);
    if (!b) return;
    // A turn id belongs to one thread for good, so checking its tenant before ending it is not racy.
    const thread = await broker.turns.threadOf(b.turn_id);
    if (!thread) return sendJson(res, 404, { error: "unknown_turn" });
    const verdict = await d.tenants.check(caller.binding, thread.teamId);
    if (!verdict.ok) return sendRefusal(res, verdict.reason, thread.teamId);
    if (!(await broker.turns.end(b.turn_id, d.now()))) return sendJson(res, 404, { error: "unknown_turn" });
    res.writeHead(204).end();
  };
}
