import { CodedError } from "../domain/errors.js";

/** Codes of storage failures. `busy`: another writer held the write lock past the wait; `invalid_record`: a write the store refuses to hold. */
export type StoreErrorCode = "newer_schema" | "migration_failed" | "migration_modified" | "open_failed" | "busy" | "invalid_record";

/** A storage failure with a message an operator can act on. */
export class StoreError extends CodedError<StoreErrorCode> {
  override readonly name = "StoreError";
}
