/** Why a connection operation was refused. */
export type ConnectionErrorCode = "unknown_service" | "scope_not_allowed" | "invalid_credential" | "not_found" | "missing_thread";

/** A refused connection operation; the message is safe to show a user or operator. */
export class ConnectionError extends Error {
  override readonly name = "ConnectionError";
  constructor(
    readonly code: ConnectionErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
