import type http from "node:http";
import {
  classifyInboundRequest,
  createMcpHandler,
  isJSONRPCNotification,
  isJSONRPCRequest,
  type McpHttpHandler,
  PROTOCOL_VERSION_META_KEY,
} from "@modelcontextprotocol/server";
import type { Broker } from "../broker/broker.js";
import type { Logger } from "../log/logger.js";
import type { HostCaller } from "./host-teams.js";
import { type RequestScope, sendJson } from "./http-server.js";
import { refusalOf, sendMcpRefusal, type TenantGuard } from "./tenant-guard.js";
import { parseThreadHeader } from "./thread-header.js";
import { sendWebResponse } from "./web-answer.js";
import { toWebRequest } from "./web-bridge.js";

// The 2026-07-28 era on /mcp: no initialize and no session. Every request carries its revision,
// client info and capabilities in `_meta`, and names its thread in X-Slaude-Thread; any replica
// answers it with a server built for that one request (SDK v2's createMcpHandler, which also
// answers server/discover and refuses a revision it does not speak with -32022). 2025-era
// traffic (no envelope) keeps its sessions: McpEndpoint routes it away before this leg.

/** The protocol revisions of the stateless era this broker speaks. */
export const MODERN_REVISIONS = ["2026-07-28"] as const;

/** One header's value as the web Headers API reads it (repeated headers joined by ", "). */
function header(req: http.IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(", ") : v;
}

/** A 2025-era revision as the MCP-Protocol-Version header spells it, with nothing around it. */
const LEGACY_REVISION = /^\d{4}-\d{2}-\d{2}$/;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * Whether a body is, without running a schema, an envelope-less single message that names no modern revision: not
 * a batch, no `result` or `error` key (the SDK's strict response schemas require one), params (if any) an object
 * whose `_meta` (if any) is an object without the protocol-version claim, and no MCP-Protocol-Version header or a
 * bare 2025-era one. For such a body the SDK's classifier answers "legacy" exactly when it is a JSON-RPC request or
 * notification; anything else takes the classifier's full path.
 */
export function plainLegacyShape(
  body: unknown,
  protocolVersionHeader: string | undefined,
): body is Record<string, unknown> {
  if (!isObject(body) || "result" in body || "error" in body) return false;
  const h = protocolVersionHeader;
  if (h !== undefined && (!LEGACY_REVISION.test(h) || h >= MODERN_REVISIONS[0])) return false;
  const params = body.params;
  if (params === undefined) return true;
  if (!isObject(params)) return false;
  const meta = params._meta;
  if (meta === undefined) return true;
  return isObject(meta) && !(PROTOCOL_VERSION_META_KEY in meta);
}

const REQUEST_KEYS = new Set(["jsonrpc", "id", "method", "params"]);

/**
 * Whether a body surely passes the SDK's strict JSON-RPC request schema, read without zod (whose parse of a request
 * costs about 0.06 ms): only the request's four keys, `jsonrpc` "2.0", a string or safe-integer `id`, a string
 * `method`, and params (if any) an object without `_meta` (loose there). False means "ask the schema", not "invalid".
 */
function plainRequest(body: Record<string, unknown>): boolean {
  for (const key in body) if (!REQUEST_KEYS.has(key) || !Object.hasOwn(body, key)) return false;
  const { jsonrpc, id, method, params } = body;
  if (jsonrpc !== "2.0" || typeof method !== "string") return false;
  if (typeof id !== "string" && !Number.isSafeInteger(id)) return false;
  return params === undefined || (isObject(params) && !("_meta" in params));
}

/**
 * Whether a parsed POST body (or a body-less GET/DELETE) belongs to the 2025 era, as the SDK routes it: the SDK's
 * own classifier (the one behind isLegacyRequest and createMcpHandler), fed the node request's headers directly
 * instead of a web Request built for it. The common 2025 request (see `plainLegacyShape`) skips the classifier's
 * response schemas, which fail on every request and build zod's error messages to do so (about 0.1 ms per call):
 * it takes a plain key check (or, failing that, the request and notification schemas) instead, with the same
 * answer (test/server/era-routing.test.ts compares both).
 */
export function isLegacyMessage(req: http.IncomingMessage, body: unknown): boolean {
  if (req.method !== "POST" || body === undefined) return true;
  const protocolVersionHeader = header(req, "mcp-protocol-version");
  if (plainLegacyShape(body, protocolVersionHeader)) {
    return plainRequest(body) || isJSONRPCRequest(body) || isJSONRPCNotification(body);
  }
  return classifiedLegacy(req, body, protocolVersionHeader);
}

/** The SDK classifier's verdict on a POST body: "legacy" or not (modern, or a rejection the modern leg answers). */
export function classifiedLegacy(
  req: http.IncomingMessage,
  body: unknown,
  protocolVersionHeader = header(req, "mcp-protocol-version"),
): boolean {
  const [mcpMethodHeader, mcpNameHeader] = [header(req, "mcp-method"), header(req, "mcp-name")];
  const routed = classifyInboundRequest({
    httpMethod: "POST",
    ...(protocolVersionHeader !== undefined && { protocolVersionHeader }),
    ...(mcpMethodHeader !== undefined && { mcpMethodHeader }),
    ...(mcpNameHeader !== undefined && { mcpNameHeader }),
    body,
  });
  return routed.kind === "legacy";
}

const THREAD_REQUIRED = "X-Slaude-Thread: <team_id>/<channel_id>/<thread_ts> is required on every 2026-07-28 request";
const busy = (max: number) => `Too many 2026-07-28 requests in progress here (the limit is ${max}); retry later`;

/** Serves 2026-07-28 requests statelessly, each for the thread its X-Slaude-Thread names. */
export class ModernLeg {
  private readonly handler: McpHttpHandler;
  private inFlight = 0;

  constructor(
    broker: Broker,
    private readonly tenants: TenantGuard,
    private readonly log: Logger,
    /** Requests answered at once (a call waiting for an approval holds one); beyond it, 503. */
    private readonly maxInFlight: number,
  ) {
    this.handler = createMcpHandler(
      (ctx) => {
        // Checked by serve() before the handler runs; a request without it never gets here.
        const thread = parseThreadHeader(ctx.requestInfo?.headers.get("x-slaude-thread") ?? undefined);
        if (!thread) throw new Error("a 2026-07-28 request reached the server factory without a thread");
        return broker.serverForThread(thread);
      },
      // 2025-era traffic never reaches this handler: McpEndpoint serves it with sessions.
      {
        legacy: "reject",
        onerror: (err) => this.log.debug("mcp 2026-07-28 request refused or failed", { error: err.message }),
      },
    );
  }

  /** Answers one modern request of `caller` whose body was read (and size-checked) by the endpoint. */
  async serve(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    caller: HostCaller,
    body: unknown,
    scope: RequestScope,
  ): Promise<void> {
    const header = req.headers["x-slaude-thread"];
    const thread = parseThreadHeader(header);
    if (!thread)
      return sendJson(res, 400, { jsonrpc: "2.0", error: { code: -32602, message: THREAD_REQUIRED }, id: idOf(body) });
    // Every request, since nothing of an earlier one is remembered.
    const verdict = await this.tenants.check(caller.binding, thread.teamId);
    if (!verdict.ok) {
      const r = refusalOf(verdict.reason, thread.teamId);
      return sendMcpRefusal(res, r.status, r.code, r.message);
    }
    if (this.inFlight >= this.maxInFlight) {
      scope.log.warn("mcp 2026-07-28 request refused: too many in progress", { maxInFlight: this.maxInFlight });
      return sendJson(
        res,
        503,
        { jsonrpc: "2.0", error: { code: -32000, message: busy(this.maxInFlight) }, id: idOf(body) },
        { "retry-after": "5" },
      );
    }
    this.inFlight++;
    // The request's signal aborts when the client closes its response stream: the SDK then cancels the call.
    const gone = new AbortController();
    const onClose = (): void => {
      if (!res.writableFinished) gone.abort();
    };
    res.once("close", onClose);
    try {
      await sendWebResponse(
        res,
        await this.handler.fetch(toWebRequest(req, { signal: gone.signal, requestId: scope.requestId }), {
          parsedBody: body,
        }),
      );
    } finally {
      res.off("close", onClose);
      this.inFlight--;
    }
  }

  /** Requests of this era being answered now. */
  get inFlightCount(): number {
    return this.inFlight;
  }

  /** Aborts the exchanges in flight (shutdown). */
  close(): Promise<void> {
    return this.handler.close();
  }
}

/** The id of a single JSON-RPC request, echoed on a refusal (null for anything else). */
function idOf(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}
