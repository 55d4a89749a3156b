import { open, openWithAad, type SealedSecret, type SecretBinding, seal, sealWithAad } from "./aead.js";
import { type Credential, type CredentialInput, credentialSchema } from "./credential.js";
import { VaultError } from "./errors.js";
import {
  type InstallationBinding,
  type InstallationTokens,
  installationAssociatedData,
  installationTokensSchema,
} from "./installation-binding.js";
import type { KeyRing } from "./keyring.js";
import { type ResultBinding, resultAssociatedData } from "./result-binding.js";

/** Encrypts credentials (connection rows), stored results and Slack installations' tokens, and decrypts them back, failing closed on any doubt. */
export class Vault {
  constructor(private readonly keys: KeyRing) {}

  /** The key id new ciphertexts are written under. */
  get primaryKeyId(): string {
    return this.keys.primaryId;
  }

  /** Seals a credential for the connection described by `binding` under the primary key. */
  sealCredential(credential: CredentialInput, binding: SecretBinding): SealedSecret {
    const valid = credentialSchema.parse(credential);
    const keyId = this.keys.primaryId;
    return seal(this.keys.subkey("credential-encryption", keyId), keyId, Buffer.from(JSON.stringify(valid)), binding);
  }

  /** Opens a sealed credential; a wiped row, unknown key, tampering or a moved row all throw VaultError. */
  openCredential(sealed: SealedSecret | null, binding: SecretBinding): Credential {
    if (!sealed) throw new VaultError("wiped", "connection has no credential (revoked or expired)");
    const plain = open(this.keys.subkey("credential-encryption", sealed.keyId), sealed, binding);
    let doc: unknown;
    try {
      doc = JSON.parse(plain.toString("utf8"));
    } catch (cause) {
      throw new VaultError("malformed_credential", "decrypted credential is not valid JSON", { cause });
    } finally {
      plain.fill(0);
    }
    const parsed = credentialSchema.safeParse(doc);
    if (!parsed.success) throw new VaultError("malformed_credential", "decrypted credential has an unexpected shape");
    return parsed.data;
  }

  /** Seals a stored tool result (already redacted) under the primary key's result subkey, bound to `binding`. */
  sealResult(plaintext: Buffer, binding: ResultBinding): SealedSecret {
    const keyId = this.keys.primaryId;
    return sealWithAad(
      this.keys.subkey("result-encryption", keyId),
      keyId,
      plaintext,
      resultAssociatedData(binding, keyId),
    );
  }

  /** Opens a stored result; an unknown (rotated-away) key, tampering or a moved row throw VaultError. */
  openResult(sealed: SealedSecret, binding: ResultBinding): Buffer {
    return openWithAad(
      this.keys.subkey("result-encryption", sealed.keyId),
      sealed,
      resultAssociatedData(binding, sealed.keyId),
    );
  }

  /** Seals an installation's Slack tokens under the primary key's installation subkey, bound to `binding`. */
  sealInstallation(tokens: InstallationTokens, binding: InstallationBinding): SealedSecret {
    const parsed = installationTokensSchema.safeParse(tokens);
    // Never the zod message: it could quote the token.
    if (!parsed.success)
      throw new VaultError(
        "malformed_credential",
        "installation tokens have an unexpected shape (a bot token is required)",
      );
    const keyId = this.keys.primaryId;
    const plain = Buffer.from(JSON.stringify(parsed.data));
    try {
      return sealWithAad(
        this.keys.subkey("installation-encryption", keyId),
        keyId,
        plain,
        installationAssociatedData(binding, keyId),
      );
    } finally {
      plain.fill(0);
    }
  }

  /** Opens an installation's tokens; a wiped row, unknown key, tampering, a moved row or a bad document throw VaultError. */
  openInstallation(sealed: SealedSecret | null, binding: InstallationBinding): InstallationTokens {
    if (!sealed) throw new VaultError("wiped", "installation has no tokens (uninstalled)");
    const key = this.keys.subkey("installation-encryption", sealed.keyId);
    let plain: Buffer;
    try {
      plain = openWithAad(key, sealed, installationAssociatedData(binding, sealed.keyId));
    } catch (cause) {
      throw new VaultError(
        "undecryptable",
        "installation tokens cannot be decrypted for this installation (tampered, moved, or wrong key)",
        { cause },
      );
    }
    let doc: unknown;
    try {
      doc = JSON.parse(plain.toString("utf8"));
    } catch (cause) {
      throw new VaultError("malformed_credential", "decrypted installation tokens are not valid JSON", { cause });
    } finally {
      plain.fill(0);
    }
    const parsed = installationTokensSchema.safeParse(doc);
    if (!parsed.success)
      throw new VaultError("malformed_credential", "decrypted installation tokens have an unexpected shape");
    const { botToken, refreshToken } = parsed.data;
    return refreshToken === undefined ? { botToken } : { botToken, refreshToken };
  }

  /** Re-encrypts an installation's tokens under the primary key (for rotation); the binding must still match. */
  resealInstallation(sealed: SealedSecret, binding: InstallationBinding): SealedSecret {
    return this.sealInstallation(this.openInstallation(sealed, binding), binding);
  }

  /** Re-encrypts `sealed` under the primary key (for rotation); the binding must still match. */
  reseal(sealed: SealedSecret, binding: SecretBinding): SealedSecret {
    return this.sealCredential(this.openCredential(sealed, binding), binding);
  }
}
