import type http from "node:http";
import type { Logger } from "../log/logger.js";
import { isStoreUnavailable } from "../store/errors.js";
import {
  factsNeeded,
  type HostBinding,
  hostMayAct,
  type TenantRefusal,
  type TenantVerdict,
  tenantRefusalCode,
  tenantRefusalMessage,
} from "../tenancy/host-binding.js";
import type { TenantDirectory } from "../tenancy/tenant-directory.js";
import { sendJson } from "./http-server.js";

// The orchestration around hostMayAct (src/tenancy/host-binding.ts): ask the tenant directory for
// exactly the facts the binding needs, decide, and answer a refusal the same way on every host route.

/** The guard's verdict: the pure decision, or the directory could not answer (refused as unavailable). */
export type GuardVerdict = TenantVerdict | { readonly ok: false; readonly reason: "directory_unavailable" };

/** JSON-RPC error code of a refused /mcp request (the one the thread check already answers). */
export const MCP_FORBIDDEN = -32003;

/** Decides whether a host token's binding may act in a team's threads, gathering the facts it needs. */
export class TenantGuard {
  constructor(
    private readonly directory: TenantDirectory,
    private readonly log: Logger,
  ) {}

  /**
   * The verdict for a host token with `binding` acting in a thread of `teamId`; a directory failure
   * refuses, and the database away throws its `StoreError` (unless `quiet`) for the server to answer
   * as an outage. A refused request is logged, unless `quiet` (an org's event stream sorting events).
   */
  async check(binding: HostBinding, teamId: string, quiet = false): Promise<GuardVerdict> {
    const need = factsNeeded(binding);
    let verdict: TenantVerdict;
    try {
      // Filled in place, in the order the directory has always been asked (no spread objects per request).
      const facts: { teamId: string; installed?: boolean; enterpriseId?: string | null; liveInstallations?: number } = {
        teamId,
      };
      if (this.directory.serves) facts.installed = await this.directory.serves(teamId);
      if (need.enterprise) facts.enterpriseId = await this.directory.enterpriseOf(teamId);
      if (need.installations) facts.liveInstallations = await this.directory.liveInstallations();
      verdict = hostMayAct(binding, facts);
    } catch (err) {
      // The database itself away is the store's outage, answered as every request's is (503
      // store_unavailable); an org stream sorting its events (`quiet`) only hides the event.
      if (isStoreUnavailable(err) && !quiet) throw err;
      this.log.error("host request refused: the tenant directory did not answer", { teamId, err: String(err) });
      return { ok: false, reason: "directory_unavailable" };
    }
    if (!verdict.ok && !quiet)
      this.log.warn("host request refused: the host token may not act in this tenant", {
        teamId,
        reason: verdict.reason,
        binding: binding.kind,
      });
    return verdict;
  }
}

/** The status, error code and sentence of a refusal (403, or 503 when the directory did not answer). */
export function refusalOf(
  reason: TenantRefusal | "directory_unavailable",
  teamId: string,
): { status: number; code: string; message: string } {
  if (reason === "directory_unavailable")
    return {
      status: 503,
      code: "tenant_directory_unavailable",
      message: "The tenant of this thread could not be checked right now; retry shortly.",
    };
  return { status: 403, code: tenantRefusalCode(reason), message: tenantRefusalMessage(reason, teamId) };
}

/** Answers a refusal as `{ error, message }` (the /v1 routes). */
export function sendRefusal(
  res: http.ServerResponse,
  reason: TenantRefusal | "directory_unavailable",
  teamId: string,
): void {
  const r = refusalOf(reason, teamId);
  sendJson(res, r.status, { error: r.code, message: r.message }, r.status === 503 ? { "retry-after": "5" } : {});
}

/** Answers a refused /mcp request as a JSON-RPC error whose `data.error` carries the code. */
export function sendMcpRefusal(res: http.ServerResponse, status: number, code: string, message: string): void {
  sendJson(
    res,
    status,
    { jsonrpc: "2.0", error: { code: MCP_FORBIDDEN, message, data: { error: code } }, id: null },
    status === 503 ? { "retry-after": "5" } : {},
  );
}
