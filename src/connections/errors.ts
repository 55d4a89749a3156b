import { CodedError } from "../domain/errors.js";

/** Why a connection operation was refused. */
export type ConnectionErrorCode =
  | "unknown_service"
  | "scope_not_allowed"
  | "invalid_credential"
  | "not_found"
  | "missing_thread";

/** A refused connection operation; the message is safe to show a user or operator. */
export class ConnectionError extends CodedError<ConnectionErrorCode> {
  override readonly name = "ConnectionError";
}
