/**
 * The base of every coded error: a string `code` callers switch on, a message safe to show (never a
 * secret), and an optional `cause` kept for logs. Subclasses name themselves and narrow the code.
 */
export class CodedError<C extends string> extends Error {
  constructor(
    readonly code: C,
    message: string,
    options?: { cause?: unknown },
  ) {
    // Only a present cause is passed on: `{ cause: undefined }` would still set the property.
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
  }
}

/** The message of anything thrown: an Error's own message, otherwise the thrown value as text. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The class name of anything thrown (an Error's `name`, otherwise its `typeof`): safe to log, never its text. */
export function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}

/** Anything thrown as an Error, for callbacks typed to take one (a thrown string becomes the message). */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
