import { CodedError } from "../../domain/errors.js";

/** Why the confined login browser could not be started. */
export type ConfinedBrowserErrorCode = "invalid_options" | "launch_failed" | "start_failed";

/** A confined-browser start-up failure; the message names the bad option or step, never a secret. */
export class ConfinedBrowserError extends CodedError<ConfinedBrowserErrorCode> {
  override readonly name = "ConfinedBrowserError";
}
