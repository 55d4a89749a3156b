import { createHash, timingSafeEqual } from "node:crypto";
import type http from "node:http";

/** Who presented a host token: its team when bound, "unbound" for a valid token without one, else "unauthorized". */
export type HostTeamVerdict = { readonly kind: "team"; readonly teamId: string } | { readonly kind: "unbound" } | { readonly kind: "unauthorized" };

/**
 * Checks `Authorization: Bearer <token>` against the host tokens in constant time and names the
 * Slack team the token is bound to (SLAUDE_HOST_TOKENS `<team_id>:<token>` entries).
 */
export class HostTeamAuth {
  private readonly entries: { readonly digest: Buffer; readonly teamId: string | undefined }[];

  constructor(tokens: readonly string[], teams: ReadonlyMap<string, string>) {
    // Fixed-length digests, hashed once: the comparison is constant-time whatever the lengths.
    this.entries = tokens.map((t) => ({ digest: createHash("sha256").update(t).digest(), teamId: teams.get(t) }));
  }

  verify(req: http.IncomingMessage): HostTeamVerdict {
    const header = req.headers.authorization;
    if (!header || !header.startsWith("Bearer ")) return { kind: "unauthorized" };
    const presented = createHash("sha256").update(header.slice(7).trim()).digest();
    let match: { teamId: string | undefined } | undefined;
    // Every entry is compared, so the time does not say which one matched.
    for (const e of this.entries) if (timingSafeEqual(e.digest, presented)) match ??= e;
    if (!match) return { kind: "unauthorized" };
    return match.teamId === undefined ? { kind: "unbound" } : { kind: "team", teamId: match.teamId };
  }
}
