import { CodedError } from "../domain/errors.js";

/**
 * Codes of storage failures. `busy`: another writer held the write lock past the wait.
 * `unavailable`: the database cannot be reached right now (refused, reset, restarting, shutting
 * down): nothing is wrong with the request, and the same statement may succeed once it is back.
 * `invalid_record`: a write the store refuses to hold. `migration_lock_timeout`: another
 * session held the migrations lock past the bounded wait.
 */
export type StoreErrorCode =
  | "newer_schema"
  | "migration_failed"
  | "migration_modified"
  | "open_failed"
  | "busy"
  | "unavailable"
  | "invalid_record"
  | "migration_lock_timeout";

/** A storage failure with a message an operator can act on. */
export class StoreError extends CodedError<StoreErrorCode> {
  override readonly name = "StoreError";
}

/** Whether `err` says the database is unreachable for now (StoreError `unavailable`), as opposed to a bug or a refusal. */
export function isStoreUnavailable(err: unknown): err is StoreError {
  return err instanceof StoreError && err.code === "unavailable";
}
