import { CodedError } from "../domain/errors.js";
import type { RunRefusal } from "./policy.js";

/** Thrown inside a pool lease when the leased vendor may not run the tool; the call path names the code. */
export class PinRefusedError extends CodedError<RunRefusal> {
  override readonly name = "PinRefusedError";
}
