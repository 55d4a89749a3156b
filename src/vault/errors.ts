import { CodedError } from "../domain/errors.js";

/** Why the vault refused: every one of these means "fail closed". */
export type VaultErrorCode = "undecryptable" | "unknown_key" | "invalid_key" | "wiped" | "malformed_credential";

/** A vault failure; messages never include key material or plaintext. */
export class VaultError extends CodedError<VaultErrorCode> {
  override readonly name = "VaultError";
}
