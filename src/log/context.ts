import { AsyncLocalStorage } from "node:async_hooks";

/** Correlation ids every log line written while serving one request (or one tool call) carries. */
export interface LogContext {
  /** The HTTP request's id (echoed in its `X-Request-Id` response header). */
  readonly requestId?: string;
  /** The mcp_call's id: the same `call_id` its audit rows carry. */
  readonly callId?: string;
}

// One storage key for the process: it holds no state of its own, only the context of the
// asynchronous flow that is running, so several apps in one process never see each other's ids.
const storage = new AsyncLocalStorage<LogContext>();

/** Runs `fn` with `fields` added to the current log context (inner ids win). */
export function withLogContext<T>(fields: LogContext, fn: () => T): T {
  return storage.run({ ...storage.getStore(), ...fields }, fn);
}

/** The log context of the running flow (empty outside a request or call). */
export function currentLogContext(): LogContext {
  return storage.getStore() ?? {};
}

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** An incoming `X-Request-Id` if it is a short safe token (letters, digits, `._:-`, ≤ 64), else undefined. */
export function safeRequestId(v: string | string[] | undefined): string | undefined {
  return typeof v === "string" && SAFE_REQUEST_ID.test(v) ? v : undefined;
}
