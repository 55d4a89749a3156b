/** Why the pool could not run a call; the broker maps each to a user-facing message. */
export type PoolErrorCode =
  | "spawn_failed"
  | "initialize_failed"
  | "pool_busy"
  | "timeout"
  | "cancelled"
  | "vendor_crashed"
  | "vendor_error"
  | "vendor_misbehaved"
  | "vendor_unreachable"
  | "vendor_incompatible"
  | "vendor_disconnected"
  | "credential_rejected"
  | "backoff"
  | "credential_incomplete"
  | "shutting_down";

/** A pool failure. Messages carry no credential; vendor text is kept in `cause` for logs only. */
export class PoolError extends Error {
  override readonly name = "PoolError";
  constructor(
    readonly code: PoolErrorCode,
    message: string,
    options?: { cause?: unknown; retryAt?: number; detail?: string },
  ) {
    super(message, options);
    this.retryAt = options?.retryAt;
    this.detail = options?.detail;
  }
  readonly retryAt: number | undefined;
  /** A short error class the broker made up ("ECONNREFUSED", "http_503"): safe to show, never vendor text. */
  readonly detail: string | undefined;
}
