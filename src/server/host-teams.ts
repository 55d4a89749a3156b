import { createHash, hash, timingSafeEqual } from "node:crypto";
import type http from "node:http";
import { bindingOfId, type HostBinding } from "../tenancy/host-binding.js";
import type { SessionTokenDigests } from "./session-token.js";

/** A host that presented a valid token: the tenant the token is bound to, and its tie to the sessions it opens. */
export interface HostCaller {
  readonly binding: HostBinding;
  /** The digest a session opened by this token records (never the token). */
  sessionDigest(): string;
  /** Whether this token opened the session recorded with `stored` (see SessionTokenDigests.check). */
  owns(stored: string | undefined): "match" | "mismatch" | "unverifiable";
}

/** A valid host token's caller, or "unauthorized" (missing, malformed or unknown bearer token). */
export type HostTeamVerdict =
  | { readonly kind: "host"; readonly caller: HostCaller }
  | { readonly kind: "unauthorized" };

interface Entry {
  readonly digest: Buffer;
  readonly caller: HostCaller;
}

/**
 * Checks `Authorization: Bearer <token>` against the host tokens in constant time and names the
 * tenant the token is bound to (SLAUDE_HOST_TOKENS `<team_id>:<token>` / `<enterprise_id>:<token>`).
 */
export class HostTeamAuth {
  private readonly entries: Entry[];

  constructor(tokens: readonly string[], teams: ReadonlyMap<string, string>, sessions: SessionTokenDigests) {
    this.entries = tokens.map((t, i) => {
      const binding = bindingOfId(teams.get(t));
      // The config parser refuses such an entry: reaching here is a bug, and it fails closed.
      if (!binding) throw new Error(`host token ${i + 1} has a binding that is neither a team nor an enterprise id`);
      const sessionDigest = sessions.digest(t);
      // Fixed-length digests, hashed once: the comparison is constant-time whatever the lengths.
      return {
        digest: createHash("sha256").update(t).digest(),
        caller: { binding, sessionDigest: () => sessionDigest, owns: (stored) => sessions.check(stored, t) },
      };
    });
  }

  /** Whether any host token is configured. */
  get configured(): boolean {
    return this.entries.length > 0;
  }

  /** How many configured tokens are bound to no tenant (the start-up rule counts them). */
  get unboundCount(): number {
    return this.entries.filter((e) => e.caller.binding.kind === "unbound").length;
  }

  /** The caller of a request by its bearer token (every entry compared in constant time), or "unauthorized". */
  verify(req: http.IncomingMessage): HostTeamVerdict {
    const header = req.headers.authorization;
    if (!header?.startsWith("Bearer ")) return { kind: "unauthorized" };
    // The one-shot hash: no Hash object per request (same SHA-256 bytes as createHash).
    const presented = hash("sha256", header.slice(7).trim(), "buffer");
    let match: Entry | undefined;
    // Every entry is compared, so the time does not say which one matched.
    for (const e of this.entries) if (timingSafeEqual(e.digest, presented)) match ??= e;
    return match ? { kind: "host", caller: match.caller } : { kind: "unauthorized" };
  }
}
