import type http from "node:http";
import type { OriginGuard } from "./host-auth.js";
import type { HostCaller, HostTeamAuth } from "./host-teams.js";
import { sendJson } from "./http-server.js";

/**
 * Shared guard of every host-facing route: Host/Origin, then the bearer host token. Answers the
 * refusal itself and returns undefined; otherwise the caller, whose tenant each route then checks.
 */
export function guardHostRequest(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  auth: HostTeamAuth,
  origin: OriginGuard,
): HostCaller | undefined {
  const o = origin.check(req);
  if (o !== "ok") {
    sendJson(res, 403, { error: o });
    return undefined;
  }
  const who = auth.verify(req);
  if (who.kind === "unauthorized") {
    sendJson(res, 401, { error: "unauthorized" }, { "www-authenticate": 'Bearer realm="slaude-connect"' });
    return undefined;
  }
  return who.caller;
}
