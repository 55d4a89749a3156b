import type { Service } from "../config/registry.js";
import { OAuthError } from "../login/oauth/errors.js";
import { isStoreUnavailable } from "../store/errors.js";
import type { Connection } from "../store/records.js";
import { VaultError } from "../vault/errors.js";
import type { CredentialSession, CredentialSessions } from "./credential-session.js";
import type { BrokerDeps } from "./deps.js";
import type { NamedFailure } from "./vendor-run.js";

/** The credential stage: open once (memoised), refresh when due, or name why it cannot be used. */
export async function credentialStage(
  d: BrokerDeps,
  sessions: CredentialSessions,
  conn: Connection,
  service: Service,
): Promise<CredentialSession | NamedFailure> {
  try {
    return (await sessions.fresh(sessions.open(conn, service), service)) ?? { code: "connection_unusable" };
  } catch (err) {
    if (err instanceof OAuthError) {
      // A refresh that failed: a rejected refresh token means a new login; anything else is transient.
      if (err.code === "needs_login" || err.code === "connection_inactive") return { code: "connection_unusable" };
      d.log.warn("oauth refresh failed", { connectionId: conn.id, code: err.code });
      return { code: "vendor_unreachable" };
    }
    // The refresh's own reads and writes found the database away: nothing ran.
    if (isStoreUnavailable(err)) return { code: "store_unavailable" };
    if (!(err instanceof VaultError)) {
      // Not the refresher's own failure (a bug, the store): never read a stray `code` as an OAuth verdict.
      d.log.error("credential refresh failed unexpectedly", {
        connectionId: conn.id,
        error: err instanceof Error ? err.name : "unknown",
      });
      return { code: "internal_error" };
    }
    d.log.error("credential refused by the vault", { connectionId: conn.id, code: err.code });
    await d.pool.drop(conn.id, "kill", "credential_unusable");
    return { code: "credential_unusable" };
  }
}
