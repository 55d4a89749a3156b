/** Why the vault refused: every one of these means "fail closed". */
export type VaultErrorCode = "undecryptable" | "unknown_key" | "invalid_key" | "wiped" | "malformed_credential";

/** A vault failure; messages never include key material or plaintext. */
export class VaultError extends Error {
  override readonly name = "VaultError";
  constructor(
    readonly code: VaultErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
