import {
  type Client,
  type JSONRPCMessage,
  type MessageExtraInfo,
  SdkError,
  SdkHttpError,
  SSEClientTransport,
  SseError,
  StreamableHTTPClientTransport,
  type Transport,
  type TransportSendOptions,
  UnauthorizedError,
} from "@modelcontextprotocol/client";
import { VERSION } from "../domain/version.js";
import { LEGACY_REVISION, MODERN_REVISION, negotiationOf, VendorClient, type VendorProtocol } from "./era.js";

// A remote vendor's MCP session and how it is lost. The SDK's HTTP transports never report close
// when a POST fails (a 404 for a session the restarted server forgot, a refused connection) and
// keep sending the dead Mcp-Session-Id; the watched transport treats any failure of the transport
// itself as the end of the session and closes, so the pool drops the client and the next call
// opens a new session (as the MCP transport spec requires after a 404). Calls are never retried.
// Both transports hand the session's one AbortSignal to every fetch, and Node's fetch adds an abort
// listener to it per request that only a garbage collection takes off again (past 1,500 between two
// major collections Node warns, and each holds its request): every request gets its own signal that
// follows the session's (perRequestSignal), so the session's signal keeps no listener per call.

/** How to reach one remote vendor. */
export interface RemoteTarget {
  readonly url: URL;
  readonly protocol: "streamable-http" | "sse" | "auto";
  /** The MCP era to speak (the registry entry's `protocol`; default auto, as for remote entries). */
  readonly era?: VendorProtocol;
  /** The credential header (already rendered); sent on every request, the SSE stream included. */
  readonly headers: Readonly<Record<string, string>>;
  readonly initializeTimeoutMs: number;
}

/** A connected remote session: the client and why its transport was lost, once it was. */
export interface RemoteSession {
  readonly client: Client;
  /** The class of the transport failure that ended the session (e.g. "session_not_found"), if any. */
  lostReason(): string | undefined;
}

/**
 * A short, secret-free class for a transport or connect failure: an HTTP status, a socket error
 * code, or what broke. Vendor text (response bodies, messages) never goes into it.
 */
export function failureClass(err: unknown): string {
  const status = httpStatusOf(err);
  if (status === 404) return "session_not_found";
  if (status !== undefined && status > 0) return `http_${status}`;
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    // The SDK's own codes ("ERA_NEGOTIATION_FAILED") name its step, not what broke: read their cause.
    if (e instanceof SdkError) continue;
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === "string" && /^[A-Z][A-Z0-9_]{1,40}$/.test(code)) return code;
  }
  if (err instanceof SseError) return "stream_closed";
  if (err instanceof Error && /^SSE stream disconnected/.test(err.message)) return "stream_closed";
  if (err instanceof TypeError) return "network_error";
  return "transport_error";
}

/** The HTTP status a transport error carries, when the server answered at all. */
export function httpStatusOf(err: unknown): number | undefined {
  if (err instanceof SdkHttpError) return err.status;
  // A 401 without an auth provider: the SDK throws its UnauthorizedError, which carries no status.
  if (err instanceof UnauthorizedError) return 401;
  if (err instanceof SseError) return typeof err.code === "number" ? err.code : undefined;
  // The SSE transport's failed POST is a plain Error naming the status: only its digits are read.
  const m = err instanceof Error ? /^Error POSTing to endpoint \(HTTP (\d{3})\)/.exec(err.message) : null;
  return m ? Number(m[1]) : undefined;
}

/** Connects over Streamable HTTP (or SSE, or Streamable with the SSE fallback on 404/405); throws the SDK's error. */
export async function connectRemote(t: RemoteTarget): Promise<RemoteSession> {
  const attempt = async (make: () => Transport, era: VendorProtocol): Promise<RemoteSession> => {
    const watched = new WatchedTransport(make());
    const client = new VendorClient({ name: "slaude-connect", version: VERSION }, negotiationOf(era));
    await client.connect(watched, { timeout: t.initializeTimeoutMs });
    watched.markConnected();
    return { client, lostReason: () => watched.lost };
  };
  const headers = { ...t.headers };
  const sse = () =>
    new SSEClientTransport(t.url, {
      requestInit: { headers },
      fetch: perRequestSignal(fetch),
      eventSourceInit: { fetch: withHeaders(headers) },
    });
  // HTTP+SSE is the 2024 transport: nothing to probe there (a pin to 2026-07-28 still fails as such).
  const sseEra: VendorProtocol = t.era === MODERN_REVISION ? MODERN_REVISION : LEGACY_REVISION;
  if (t.protocol === "sse") return attempt(sse, sseEra);
  try {
    return await attempt(
      () => new StreamableHTTPClientTransport(t.url, { requestInit: { headers }, fetch: perRequestSignal(fetch) }),
      t.era ?? "auto",
    );
  } catch (first) {
    const code = httpStatusOf(first);
    // Only a server that does not speak Streamable HTTP (404/405) gets the SSE fallback.
    if (t.protocol !== "auto" || (code !== 404 && code !== 405)) throw first;
    return attempt(sse, sseEra);
  }
}

/**
 * Wraps an SDK client transport: the first failure of the transport itself (a failed send, a
 * broken or refused stream) marks the session lost and closes it, which the SDK reports as close.
 * A message that failed to parse is the vendor's noise, not a lost session.
 */
class WatchedTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;
  lost: string | undefined;
  /** Set once initialize succeeded: only a live session is closed on a failure (a connect just fails). */
  private connected = false;
  private closed = false;

  constructor(private readonly inner: Transport) {
    inner.onmessage = (m, extra) => {
      // An answer before the session is up ends the version probe: a failed probe (a 2025 server's
      // 400 to server/discover, before the fallback to initialize) is not a lost session.
      if (!this.connected) this.lost = undefined;
      this.onmessage?.(m, extra);
    };
    inner.onclose = () => {
      if (this.closed) return;
      this.closed = true;
      this.onclose?.();
    };
    inner.onerror = (e) => {
      if (!isParseError(e)) this.lose(e);
      this.onerror?.(e);
    };
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  /** One POST per request (Streamable HTTP): on the 2026-07-28 era, closing its stream is the cancellation. */
  get hasPerRequestStream(): boolean {
    return this.inner.hasPerRequestStream === true;
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version);
  }

  setSupportedProtocolVersions(versions: string[]): void {
    this.inner.setSupportedProtocolVersions?.(versions);
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    try {
      await this.inner.send(message, options);
    } catch (err) {
      this.lose(err);
      throw err;
    }
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  /** The session is initialized; one already lost on the way (its stream failed) closes now. */
  markConnected(): void {
    this.connected = true;
    if (this.lost !== undefined) this.closeSoon();
  }

  private lose(err: unknown): void {
    if (this.lost !== undefined || this.closed) return;
    this.lost = failureClass(err);
    if (this.connected) this.closeSoon();
  }

  /** After the failing request has its own error: pending calls then end with "connection closed". */
  private closeSoon(): void {
    setImmediate(() => void this.inner.close().catch(() => {}));
  }
}

function isParseError(e: unknown): boolean {
  return e instanceof SyntaxError || (e instanceof Error && e.name === "ZodError");
}

/**
 * A fetch whose request listens to a signal of its own that follows the caller's: AbortSignal.any
 * links the two without a listener on the caller's signal (Node keeps a weak reference instead), so
 * a session's long-lived signal does not gather one listener per request; aborting it still aborts
 * every request in flight, their response streams included.
 */
export function perRequestSignal(inner: typeof fetch): typeof fetch {
  return (input, init) =>
    init?.signal ? inner(input, { ...init, signal: AbortSignal.any([init.signal]) }) : inner(input, init);
}

/** A fetch that adds `headers` (the SSE GET stream does not use requestInit). */
function withHeaders(headers: Record<string, string>): typeof fetch {
  return (input, init) => {
    const h = new Headers(init?.headers);
    for (const [k, v] of Object.entries(headers)) h.set(k, v);
    return fetch(input, { ...init, headers: h });
  };
}
