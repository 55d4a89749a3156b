import { CodedError } from "../domain/errors.js";

/** Codes of storage failures. `busy`: another writer held the write lock past the wait. */
export type StoreErrorCode = "newer_schema" | "migration_failed" | "migration_modified" | "open_failed" | "busy" | "migration_lock_timeout";

/** A storage failure with a message an operator can act on. */
export class StoreError extends CodedError<StoreErrorCode> {
  override readonly name = "StoreError";
}
