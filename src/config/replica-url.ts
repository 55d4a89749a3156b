import { z } from "zod";

// A replica's internal base URL (SLAUDE_REPLICA_URL): where the other replicas of one deployment
// reach this process to forward a login it holds. One rule, used for the setting and for every
// holder address read back from the database before anything connects to it.

function bareOrigin(s: string): string | undefined {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return undefined;
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return undefined;
  if (!u.hostname || u.username || u.password || u.pathname !== "/" || u.search || u.hash || /[?#]/.test(s))
    return undefined;
  return u.origin;
}

/** http(s)://host[:port], nothing else (no credentials, path, query or fragment); parses to its origin. */
export const replicaUrlSchema = z.string().transform((s, ctx) => {
  const origin = bareOrigin(s);
  if (origin === undefined) {
    ctx.addIssue({
      code: "custom",
      message:
        "must be a bare origin http(s)://host[:port] (e.g. http://10.0.0.5:8080): no user, path, query or fragment",
    });
    return z.NEVER;
  }
  return origin;
});

/** The origin of a valid replica URL, or undefined (a holder address that must never be connected to). */
export function parseReplicaUrl(s: unknown): string | undefined {
  return typeof s === "string" ? bareOrigin(s) : undefined;
}
