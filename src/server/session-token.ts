import { createHmac, timingSafeEqual } from "node:crypto";
import type { KeyRing } from "../vault/keyring.js";

// What an MCP session remembers of the host token that opened it: `<key id>:<HMAC-SHA256 hex>` under
// the master key's "mcp-session-token" subkey. Never the token: a database dump of session records
// gives nothing to replay, and every replica (one master key) computes the same value. The key id
// keeps sessions opened before a key rotation verifiable while the old key is still configured.

/** Most token MACs kept (host tokens × configured keys is far below it). */
export const MAX_CACHED_MACS = 256;
/** Most stored digests kept parsed (one per host token and key: far below it). */
export const MAX_PARSED_DIGESTS = 256;

/** A stored digest split into its key id and MAC bytes (undefined MAC: not 32 bytes of hex). */
interface ParsedDigest {
  readonly keyId: string;
  readonly mac: Buffer | undefined;
}

/** Computes and checks the token digests stored with MCP sessions. */
export class SessionTokenDigests {
  /**
   * MACs already computed, by key id and token: a session's every request checks its token, and the
   * tokens are the configured host tokens (a handful), so each is derived once per key. Bounded all the same.
   */
  private readonly macs = new Map<string, Buffer>();
  /**
   * Stored digests already split and decoded: a stored digest depends only on the host token and
   * the key, so a session's every request brings the same string. Bounded all the same.
   */
  private readonly parsed = new Map<string, ParsedDigest>();

  constructor(private readonly ring: KeyRing) {}

  /** How many token MACs are kept now (at most MAX_CACHED_MACS). */
  get cachedMacs(): number {
    return this.macs.size;
  }

  /** The digest a session opened with `token` records (under the primary key). */
  digest(token: string): string {
    return `${this.ring.primaryId}:${this.mac(token, this.ring.primaryId)}`;
  }

  /** How many stored digests are kept parsed now (at most MAX_PARSED_DIGESTS). */
  get parsedDigests(): number {
    return this.parsed.size;
  }

  /**
   * Whether `token` is the one that opened the session recorded with `stored`: "match", "mismatch",
   * or "unverifiable" (no digest recorded, malformed, or a key no longer configured: fail closed).
   */
  check(stored: string | undefined, token: string): "match" | "mismatch" | "unverifiable" {
    if (stored === undefined) return "unverifiable";
    const { keyId, mac } = this.parse(stored);
    // The key ring is asked every time: only the decoding of the stored string is remembered.
    if (mac === undefined || !this.ring.has(keyId)) return "unverifiable";
    return timingSafeEqual(mac, this.macOf(token, keyId)) ? "match" : "mismatch";
  }

  private parse(stored: string): ParsedDigest {
    let p = this.parsed.get(stored);
    if (!p) {
      const at = stored.indexOf(":");
      const mac = Buffer.from(stored.slice(at + 1), "hex");
      p = { keyId: at > 0 ? stored.slice(0, at) : "", mac: mac.length === 32 ? mac : undefined };
      if (this.parsed.size >= MAX_PARSED_DIGESTS) this.parsed.clear();
      this.parsed.set(stored, p);
    }
    return p;
  }

  private macOf(token: string, keyId: string): Buffer {
    const k = `${keyId}\n${token}`;
    let m = this.macs.get(k);
    if (!m) {
      if (this.macs.size >= MAX_CACHED_MACS) this.macs.clear();
      m = Buffer.from(this.mac(token, keyId), "hex");
      this.macs.set(k, m);
    }
    return m;
  }

  private mac(token: string, keyId: string): string {
    return createHmac("sha256", this.ring.subkey("mcp-session-token", keyId)).update(token, "utf8").digest("hex");
  }
}
