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
