import { CodedError } from "../domain/errors.js";

/**
 * Why a tenant is refused: no installation serves it (never installed, or uninstalled), it is
 * disabled (an operator, or Slack's tokens_revoked), its token could not be refreshed, or an
 * install was refused (not on the allowlist). Messages name ids, never tokens.
 */
export type InstallationErrorCode =
  | "unknown_installation"
  | "installation_disabled"
  | "refresh_failed"
  | "install_refused";

/** A tenant refusal or an installation failure. */
export class InstallationError extends CodedError<InstallationErrorCode> {
  override readonly name = "InstallationError";
}
