/**
 * Why an OAuth step failed. `invalid_grant`: the code or refresh token was rejected (the user must
 * log in again); `needs_login`: the connection was marked as needing a new login; `network` and
 * `server_error` are transient; the rest are vendor or operator misconfiguration.
 */
export type OAuthErrorCode =
  | "invalid_grant"
  | "invalid_client"
  | "invalid_request"
  | "access_denied"
  | "expired_token"
  | "state_mismatch"
  | "server_error"
  | "network"
  | "invalid_response"
  | "insecure_endpoint"
  | "discovery_failed"
  | "pkce_unsupported"
  | "registration_failed"
  | "client_unknown"
  | "needs_login"
  | "connection_inactive";

/**
 * An OAuth failure. The message names the step and, at most, an HTTP status and the vendor's
 * standard error code: never a token, a code, a verifier, a client secret or a response body.
 */
export class OAuthError extends Error {
  override readonly name = "OAuthError";
  /** HTTP status of the failing response, when there was one. */
  readonly status: number | undefined;
  /** The vendor's RFC 6749 `error` value, when it was a plain token (never its description). */
  readonly vendorError: string | undefined;

  constructor(
    readonly code: OAuthErrorCode,
    message: string,
    options?: { cause?: unknown; status?: number; vendorError?: string },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.status = options?.status;
    this.vendorError = options?.vendorError;
  }
}

/** Whether a failure is worth retrying later (the credential itself may still be good). */
export function isTransient(err: unknown): boolean {
  return err instanceof OAuthError && (err.code === "network" || err.code === "server_error");
}
