/** Why the confined login browser could not be started. */
export type ConfinedBrowserErrorCode = "invalid_options" | "launch_failed" | "start_failed";

/** A confined-browser start-up failure; the message names the bad option or step, never a secret. */
export class ConfinedBrowserError extends Error {
  override readonly name = "ConfinedBrowserError";
  constructor(
    readonly code: ConfinedBrowserErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
