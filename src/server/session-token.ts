import { createHmac, timingSafeEqual } from "node:crypto";
import type { KeyRing } from "../vault/keyring.js";

// What an MCP session remembers of the host token that opened it: `<key id>:<HMAC-SHA256 hex>` under
// the master key's "mcp-session-token" subkey. Never the token: a database dump of session records
// gives nothing to replay, and every replica (one master key) computes the same value. The key id
// keeps sessions opened before a key rotation verifiable while the old key is still configured.

/** Computes and checks the token digests stored with MCP sessions. */
export class SessionTokenDigests {
  constructor(private readonly ring: KeyRing) {}

  /** The digest a session opened with `token` records (under the primary key). */
  digest(token: string): string {
    return `${this.ring.primaryId}:${this.mac(token, this.ring.primaryId)}`;
  }

  /**
   * Whether `token` is the one that opened the session recorded with `stored`: "match", "mismatch",
   * or "unverifiable" (no digest recorded, malformed, or a key no longer configured: fail closed).
   */
  check(stored: string | undefined, token: string): "match" | "mismatch" | "unverifiable" {
    if (stored === undefined) return "unverifiable";
    const at = stored.indexOf(":");
    const keyId = at > 0 ? stored.slice(0, at) : "";
    const mac = Buffer.from(stored.slice(at + 1), "hex");
    if (!this.ring.has(keyId) || mac.length !== 32) return "unverifiable";
    return timingSafeEqual(mac, Buffer.from(this.mac(token, keyId), "hex")) ? "match" : "mismatch";
  }

  private mac(token: string, keyId: string): string {
    return createHmac("sha256", this.ring.subkey("mcp-session-token", keyId)).update(token, "utf8").digest("hex");
  }
}
