import { CodedError } from "../domain/errors.js";

/**
 * Why a login link could not be minted. `unknown_service`: not in the registry; `scope_not_allowed`:
 * the service does not allow a connection of the asked scope; `needs_thread`: a thread-scoped
 * connection was asked for without a thread. Each gets its own answer to the user.
 */
export type LoginErrorCode = "unknown_service" | "scope_not_allowed" | "needs_thread";

/** A refused mint; the message names the service and scope, never a token. */
export class LoginError extends CodedError<LoginErrorCode> {
  override readonly name = "LoginError";
}
