// Correlation ids are not kept in an ambient context: the HTTP server binds `requestId` to a child
// logger per request (`log.with`), the call service binds `callId`, and each passes its logger down
// (docs/operations.md#logs). Nothing in src imports node:async_hooks (test/log/no-async-context.test.ts).

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** An incoming `X-Request-Id` if it is a short safe token (letters, digits, `._:-`, ≤ 64), else undefined. */
export function safeRequestId(v: string | string[] | undefined): string | undefined {
  return typeof v === "string" && SAFE_REQUEST_ID.test(v) ? v : undefined;
}
