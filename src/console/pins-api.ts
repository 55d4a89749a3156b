import type http from "node:http";
import { z } from "zod";
import { serviceName } from "../config/registry-schema.js";
import { doneSentence, type PinReview, refusalSentence } from "../pinning/review.js";
import { sendJson } from "../server/http-server.js";
import { jsonBody, knownUser, query, refuse } from "./http.js";
import type { ConsoleWorkspace } from "./ports.js";

// The Tool changes panel's API (admins only): the team's quarantined, new and rejected tools with
// the line diff of each, and Accept / Reject bound to the definition hash the admin saw. The
// decision is PinService's, as `slaude-connect registry accept|reject` applies it.

const id = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/);
const userQuery = z.object({ user: id }).strict();
const decisionBody = z
  .object({
    kind: z.enum(["accept", "reject"]),
    service: serviceName,
    // Vendor tool names are vendor text: any printable string of a bounded size.
    tool: z.string().min(1).max(256),
    hash: z.string().regex(/^[0-9a-f]{64}$/),
    asUserId: id,
  })
  .strict();

/** Handlers of the tool-changes and tool-decision endpoints. */
export class PinsApi {
  constructor(
    private readonly d: { readonly workspace: Pick<ConsoleWorkspace, "teamId" | "users">; readonly review: PinReview },
  ) {}

  /** GET /console/api/tool-changes?user=U: the team's tool changes with diffs; 403 unless U is an admin. */
  async list(res: http.ServerResponse, url: URL): Promise<void> {
    const q = query(res, url, userQuery);
    if (!q || !(await knownUser(this.d.workspace, res, q.user))) return;
    const items = await this.d.review.list(this.d.workspace.teamId, q.user);
    if (!items) return refuse(res, 403, "not_admin", refusalSentence("not_admin"));
    sendJson(res, 200, { changes: items });
  }

  /** POST /console/api/tool-decision: accept or reject one change as the acting admin. */
  async decide(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const b = await jsonBody(req, res, decisionBody);
    if (!b || !(await knownUser(this.d.workspace, res, b.asUserId))) return;
    const decision = { kind: b.kind, service: b.service, tool: b.tool, hash: b.hash };
    const r = await this.d.review.decide(this.d.workspace.teamId, b.asUserId, decision);
    switch (r.kind) {
      case "not_admin":
        return refuse(res, 403, "not_admin", refusalSentence("not_admin"));
      case "refused":
        // A stale view (hash_mismatch) or an already decided tool is a conflict, an unknown tool a 404.
        return refuse(res, r.reason === "not_found" ? 404 : 409, r.reason, refusalSentence(r.reason));
      case "done":
        return sendJson(res, 200, { ok: true, status: r.status, message: doneSentence(decision) });
    }
  }
}
