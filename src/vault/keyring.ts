import { createHash, hkdfSync } from "node:crypto";
import { VaultError } from "./errors.js";

/** The purposes a master key is split into; each gets its own HKDF subkey. */
export type KeyPurpose =
  | "credential-encryption"
  | "login-link"
  | "approval-nonce"
  | "result-encryption"
  | "installation-encryption"
  | "mcp-session-token"
  | "event-relay"
  | "pg-lock-keys"
  | "cluster-signals";

const HKDF_SALT = Buffer.from("slaude-connect/hkdf/v1");

/** Decodes a base64 master key; exactly 32 bytes of canonical base64 or a VaultError naming `name`. */
export function decodeMasterKey(b64: string, name = "SLAUDE_ENCRYPTION_KEY"): Buffer {
  const trimmed = b64.trim();
  const buf = Buffer.from(trimmed, "base64");
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) || buf.toString("base64") !== trimmed) {
    throw new VaultError(
      "invalid_key",
      `${name} is not valid base64 (expected 32 random bytes: \`openssl rand -base64 32\`)`,
    );
  }
  if (buf.length !== 32) throw new VaultError("invalid_key", `${name} must decode to 32 bytes, got ${buf.length}`);
  return buf;
}

/** A stable, non-secret identifier of a master key (a truncated hash), recorded on every row. */
export function keyIdOf(master: Buffer): string {
  return `k_${createHash("sha256").update("slaude-connect/key-id/v1\0").update(master).digest("hex").slice(0, 16)}`;
}

interface KeyEntry {
  readonly id: string;
  readonly master: Buffer;
  readonly subkeys: Map<KeyPurpose, Buffer>;
}

/**
 * The master keys the process knows: one primary (new encryptions) and any previous ones
 * (decryption only, until `keys rotate` re-encrypts their rows). Subkeys come from HKDF-SHA256.
 */
export class KeyRing {
  private readonly byId = new Map<string, KeyEntry>();
  readonly primaryId: string;

  constructor(primary: Buffer, previous: readonly Buffer[] = []) {
    this.primaryId = this.add(primary);
    for (const k of previous) this.add(k);
  }

  /** Builds a ring from base64 strings, naming the variable on a bad key. */
  static fromBase64(primary: string, previous: readonly string[] = []): KeyRing {
    return new KeyRing(
      decodeMasterKey(primary),
      previous.map((p, i) => decodeMasterKey(p, `SLAUDE_ENCRYPTION_KEY_PREVIOUS[${i}]`)),
    );
  }

  private add(master: Buffer): string {
    const id = keyIdOf(master);
    if (!this.byId.has(id)) this.byId.set(id, { id, master: Buffer.from(master), subkeys: new Map() });
    return id;
  }

  has(keyId: string): boolean {
    return this.byId.has(keyId);
  }

  /** The ids of every key in the ring, primary first. */
  ids(): string[] {
    return [this.primaryId, ...[...this.byId.keys()].filter((k) => k !== this.primaryId)];
  }

  /** The subkey for `purpose` under key `keyId` (default: primary); unknown ids fail closed. */
  subkey(purpose: KeyPurpose, keyId: string = this.primaryId): Buffer {
    const entry = this.byId.get(keyId);
    if (!entry) throw new VaultError("unknown_key", `no key with id ${keyId} is configured (was it rotated away?)`);
    let key = entry.subkeys.get(purpose);
    if (!key) {
      key = Buffer.from(hkdfSync("sha256", entry.master, HKDF_SALT, Buffer.from(purpose), 32));
      entry.subkeys.set(purpose, key);
    }
    return key;
  }
}
