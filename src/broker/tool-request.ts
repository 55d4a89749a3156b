import type { ServerContext } from "@modelcontextprotocol/server";
import type { Logger } from "../log/logger.js";
import type { CallerContext } from "./deps.js";

// What a broker tool handler reads of the HTTP request the SDK's transport hands over: the turn
// the host named and the request's id, both from the web request's headers.

/** Per-request facts the caller is resolved from: the turn the host named (`X-Slaude-Turn`), if any. */
export interface CallerRequest {
  readonly turnId?: string;
}

/** Resolves the caller of one tool call, live; a string is a refusal code. */
export type CallerResolver = (
  req: CallerRequest,
) => Promise<CallerContext | "thread_mismatch" | "turn_ambiguous" | "turn_unknown">;

/** The turn a request names: the `X-Slaude-Turn` header of the HTTP request the transport hands over. */
export function callerRequest(ctx: Pick<ServerContext, "http">): CallerRequest {
  // A repeated header arrives joined ("a, b"): not a turn id, so it is refused as unknown, never guessed between.
  const v = ctx.http?.req?.headers.get("x-slaude-turn");
  return v === null || v === undefined ? {} : { turnId: v };
}

/**
 * `log` with the request's id bound: the `X-Request-Id` the MCP endpoint set on the web request it
 * handed the transport (the HTTP server's id for this request); `log` itself when there is none.
 */
export function requestLog(log: Logger, ctx: Pick<ServerContext, "http">): Logger {
  const requestId = ctx.http?.req?.headers.get("x-request-id");
  return requestId ? log.with({ requestId }) : log;
}
