import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { VaultError } from "./errors.js";

/** What a ciphertext is bound to: every field that decides who may use the credential. */
export interface SecretBinding {
  readonly connectionId: string;
  readonly teamId: string;
  /** Null for the shared (broker-owned) identity. */
  readonly ownerUserId: string | null;
  readonly service: string;
  readonly scope: "thread" | "user" | "shared";
  readonly channelId: string | null;
  readonly threadTs: string | null;
}

/** An AES-256-GCM ciphertext with its key id, 96-bit nonce and 128-bit tag. */
export interface SealedSecret {
  readonly keyId: string;
  readonly nonce: Buffer;
  readonly ciphertext: Buffer;
  readonly tag: Buffer;
}

const AAD_VERSION = "slaude-connect/credential/v1";

/** The additional authenticated data: a canonical encoding of the binding plus the key id. */
export function associatedData(binding: SecretBinding, keyId: string): Buffer {
  return Buffer.from(
    JSON.stringify([
      AAD_VERSION,
      binding.connectionId,
      binding.teamId,
      binding.ownerUserId,
      binding.service,
      binding.scope,
      binding.channelId,
      binding.threadTs,
      keyId,
    ]),
  );
}

/** Encrypts `plaintext` under `key` with a fresh random nonce, bound to `binding`. */
export function seal(key: Buffer, keyId: string, plaintext: Buffer, binding: SecretBinding): SealedSecret {
  return sealWithAad(key, keyId, plaintext, associatedData(binding, keyId));
}

/** Encrypts `plaintext` under `key` with a fresh random nonce and the given AAD (which must name `keyId`). */
export function sealWithAad(key: Buffer, keyId: string, plaintext: Buffer, aad: Buffer): SealedSecret {
  const nonce = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, nonce);
  cipher.setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { keyId, nonce, ciphertext, tag: cipher.getAuthTag() };
}

/** Decrypts and authenticates; any mismatch of key, nonce, tag, ciphertext or binding throws. */
export function open(key: Buffer, sealed: SealedSecret, binding: SecretBinding): Buffer {
  return openWithAad(key, sealed, associatedData(binding, sealed.keyId));
}

/** Decrypts and authenticates against `aad`; any mismatch throws VaultError `undecryptable`. */
export function openWithAad(key: Buffer, sealed: SealedSecret, aad: Buffer): Buffer {
  if (sealed.nonce.length !== 12 || sealed.tag.length !== 16)
    throw new VaultError("undecryptable", "credential ciphertext is malformed");
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, sealed.nonce, { authTagLength: 16 });
    decipher.setAAD(aad);
    decipher.setAuthTag(sealed.tag);
    return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]);
  } catch (cause) {
    throw new VaultError(
      "undecryptable",
      "credential cannot be decrypted for this connection (tampered, moved, or wrong key)",
      { cause },
    );
  }
}
