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
  | "backoff"
  | "credential_incomplete"
  | "shutting_down";

/** A pool failure. Messages carry no credential; vendor text is kept in `cause` for logs only. */
export class PoolError extends Error {
  override readonly name = "PoolError";
  constructor(
    readonly code: PoolErrorCode,
    message: string,
    options?: { cause?: unknown; retryAt?: number },
  ) {
    super(message, options);
    this.retryAt = options?.retryAt;
  }
  readonly retryAt: number | undefined;
}
