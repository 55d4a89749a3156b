import type http from "node:http";

// node:http <-> web Request/Response, for the SDK's web-standard Streamable HTTP transport. We hold
// that transport ourselves (not the node wrapper, which hides it) so a session can also be fed an
// internal request: the replayed initialize that rebuilds a session opened on another replica.

const ORIGIN = "http://slaude-connect.invalid";

/** `path` (a request line's target) as an origin-form path and query: never another host. */
function originForm(path: string): string {
  if (path.startsWith("/") && !path.startsWith("//")) return path;
  const u = new URL(path, ORIGIN);
  return `${u.pathname}${u.search}`;
}

/**
 * The read side of web `Headers` over a request's raw name/value list: what the SDK's transport
 * and our tool handlers read (`get`, `has`, iteration). Names compare case-insensitively and
 * repeated headers join with ", ", as in `Headers`; nothing is copied or validated again (Node's
 * parser already refused malformed names and values). It cannot be changed: nobody downstream
 * writes a request's headers, and a write here would be a bug to see at once.
 */
class RawHeaderList {
  constructor(private readonly raw: readonly string[]) {}

  get(name: string): string | null {
    const want = name.toLowerCase();
    let found: string | null = null;
    for (let i = 0; i + 1 < this.raw.length; i += 2) {
      if (this.raw[i]!.toLowerCase() !== want) continue;
      found = found === null ? this.raw[i + 1]! : `${found}, ${this.raw[i + 1]!}`;
    }
    return found;
  }
  has(name: string): boolean {
    return this.get(name) !== null;
  }
  getSetCookie(): string[] {
    const out: string[] = [];
    for (let i = 0; i + 1 < this.raw.length; i += 2) {
      if (this.raw[i]!.toLowerCase() === "set-cookie") out.push(this.raw[i + 1]!);
    }
    return out;
  }
  /** Names lowercased and sorted, repeated ones joined but each set-cookie apart: as `Headers` iterates. */
  *entries(): IterableIterator<[string, string]> {
    const names = new Set<string>();
    for (let i = 0; i + 1 < this.raw.length; i += 2) names.add(this.raw[i]!.toLowerCase());
    for (const n of [...names].sort()) {
      if (n === "set-cookie") for (const c of this.getSetCookie()) yield [n, c];
      else yield [n, this.get(n)!];
    }
  }
  *keys(): IterableIterator<string> {
    for (const [k] of this.entries()) yield k;
  }
  *values(): IterableIterator<string> {
    for (const [, v] of this.entries()) yield v;
  }
  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
  forEach(fn: (value: string, key: string, parent: RawHeaderList) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) fn.call(thisArg, v, k, this);
  }
  append(): never {
    throw new TypeError("a forwarded request's headers are read-only");
  }
  set(): never {
    throw new TypeError("a forwarded request's headers are read-only");
  }
  delete(): never {
    throw new TypeError("a forwarded request's headers are read-only");
  }
}

/**
 * A web Request answered from the node request it stands for. The SDK's transports read only its
 * method, headers, URL and (2026-07-28 era) signal; building a real undici `Request` for that cost
 * more than the rest of the bridge (its own AbortController, a validated `Headers` copy, a URL
 * parse: about 0.1 ms of a warm call). Any other member (body, clone, cache, …) is answered by a
 * real body-less Request built on first use, so the object behaves as one; the same approach as
 * @hono/node-server's request. It is an instance of `Request` for the code that checks.
 */
class ForwardedRequest {
  #real: Request | undefined;
  #headers: RawHeaderList | undefined;
  #signal: AbortSignal | undefined;

  constructor(
    readonly method: string,
    readonly url: string,
    private readonly raw: readonly string[],
    signal: AbortSignal | undefined,
  ) {
    this.#signal = signal;
  }

  get headers(): RawHeaderList {
    this.#headers ??= new RawHeaderList(this.raw);
    return this.#headers;
  }

  /** The given signal itself (a real Request would follow it with one of its own); else one that never aborts. */
  get signal(): AbortSignal {
    this.#signal ??= new AbortController().signal;
    return this.#signal;
  }

  /** The real Request, for members nobody on the warm path reads. */
  real(): Request {
    if (!this.#real) {
      const headers = new Headers();
      for (let i = 0; i + 1 < this.raw.length; i += 2) headers.append(this.raw[i]!, this.raw[i + 1]!);
      this.#real = new Request(this.url, { method: this.method, headers, signal: this.signal });
    }
    return this.#real;
  }
}

const OWN = new Set<PropertyKey>(["constructor", "method", "url", "headers", "signal"]);
for (const key of Reflect.ownKeys(Request.prototype)) {
  const d = Object.getOwnPropertyDescriptor(Request.prototype, key);
  if (OWN.has(key) || !d) continue;
  if (d.get) {
    Object.defineProperty(ForwardedRequest.prototype, key, {
      get(this: ForwardedRequest) {
        return Reflect.get(this.real(), key);
      },
    });
  } else if (typeof d.value === "function" && key !== Symbol.for("nodejs.util.inspect.custom")) {
    const method = d.value as (...args: unknown[]) => unknown;
    Object.defineProperty(ForwardedRequest.prototype, key, {
      value(this: ForwardedRequest, ...args: unknown[]) {
        return method.apply(this.real(), args);
      },
    });
  }
}
Object.setPrototypeOf(ForwardedRequest.prototype, Request.prototype);

/** What a forwarded request carries besides the node request's own method, path and headers. */
export interface ForwardedExtras {
  /** The request's abort signal: the SDK ends the exchange when it aborts. */
  readonly signal?: AbortSignal;
  /**
   * The request's id, as `X-Request-Id` in place of whatever the client sent (the generated id
   * when the client's was absent or unsafe): the broker's tool handlers log under it.
   */
  readonly requestId?: string;
}

/** The raw header list with `X-Request-Id` set to `id` (a client's own dropped). */
function withRequestId(raw: readonly string[], id: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() !== "x-request-id") out.push(raw[i]!, raw[i + 1]!);
  }
  out.push("x-request-id", id);
  return out;
}

/**
 * A web Request with the method, path and headers of `req` (and `extras`); no body (the endpoint
 * has parsed it already).
 */
export function toWebRequest(req: http.IncomingMessage, extras: ForwardedExtras = {}): Request {
  // The path is all the transport reads of the URL; the origin is fixed (Host was checked by OriginGuard). An
  // origin-form path is appended to it as it is (no URL parse of our own); any other form gives its path only.
  const url = `${ORIGIN}${originForm(req.url ?? "/mcp")}`;
  // A Request in all but construction (see ForwardedRequest): its prototype chain is Request's.
  const raw = extras.requestId === undefined ? req.rawHeaders : withRequestId(req.rawHeaders, extras.requestId);
  return new ForwardedRequest(req.method ?? "GET", url, raw, extras.signal) as unknown as Request;
}

/**
 * How long the first chunk of a streamed body may take before the headers go out alone. A warm call's
 * answer arrives well within it, so it leaves in one write; a stream that stays quiet (a call waiting
 * for an approval) still gets its headers this soon, which is all a client waits for (an HTTP
 * client's header timeout, a proxy's idle one).
 */
export const FIRST_CHUNK_WAIT_MS = 20;

const SSE_MESSAGE_START = new TextEncoder().encode("event: message\ndata: ");
const SSE_EVENT_END = new TextEncoder().encode("\n\n");
const NEWLINE = 0x0a;

/**
 * The JSON-RPC message of an SSE body that is exactly one `message` event without an id (what the
 * SDK's transport writes for a request's answer: `event: message`, `data: <one line of JSON>`),
 * as a view of `chunk`; undefined for anything else.
 */
export function soleSseMessage(chunk: Uint8Array): Uint8Array | undefined {
  const head = SSE_MESSAGE_START.length;
  const end = chunk.length - SSE_EVENT_END.length;
  if (end <= head) return undefined;
  for (let i = 0; i < head; i++) if (chunk[i] !== SSE_MESSAGE_START[i]) return undefined;
  if (chunk[end] !== NEWLINE || chunk[end + 1] !== NEWLINE) return undefined;
  // One data line: JSON.stringify writes no raw newline, so another one means another field or event.
  const nl = chunk.indexOf(NEWLINE, head);
  return nl === end ? chunk.subarray(head, end) : undefined;
}

/** The headers of `r` as node writes them. */
function nodeHeaders(r: Response): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  r.headers.forEach((v, k) => {
    headers[k] = k === "set-cookie" ? r.headers.getSetCookie() : v;
  });
  return headers;
}

/**
 * Writes `r` to `res`, streaming its body (an SSE stream stays open as long as the transport keeps
 * it). When the client goes away first, the body is cancelled so the transport drops the stream.
 *
 * The answer to a POST that the SDK's transport streams as SSE is sent as `application/json`
 * instead when the stream turns out to hold just that one answer: its only event arrives before the
 * headers had to go out (FIRST_CHUNK_WAIT_MS) and the stream ends with it. Streamable HTTP lets the
 * server choose either for a request's answer and every client must read both; a client parses one
 * JSON body for much less than an event stream. A stream that sends anything before its answer
 * (progress), or stays quiet past the wait (an approval), is streamed as it was. Output is corked
 * until the event loop's next turn: what the transport emits together (an answer and the stream's
 * end) reaches the socket in one write instead of one per piece.
 */
export async function sendWebResponse(res: http.ServerResponse, r: Response): Promise<void> {
  const headers = nodeHeaders(r);
  if (!r.body) {
    res.writeHead(r.status, headers);
    res.end();
    return;
  }
  const reader = r.body.getReader();
  const gone = (): void => void reader.cancel().catch(() => {});
  res.once("close", gone);
  // Headers go out with the first chunk, or alone once it is late: a client reads nothing of an SSE stream before them.
  let headersSent = false;
  const sendHeaders = (): void => {
    if (headersSent) return;
    headersSent = true;
    res.writeHead(r.status, headers);
  };
  const early = setTimeout(() => {
    if (headersSent || res.destroyed) return;
    sendHeaders();
    res.flushHeaders();
  }, FIRST_CHUNK_WAIT_MS);
  let corked = false;
  const uncork = (): void => {
    corked = false;
    res.uncork();
  };
  const write = async (value: Uint8Array): Promise<void> => {
    sendHeaders();
    if (!corked) {
      corked = true;
      res.cork();
      setImmediate(uncork);
    }
    if (!res.write(value)) await drained(res);
  };
  const answerable = r.status === 200 && res.req?.method === "POST" && isEventStream(r.headers.get("content-type"));
  // One read ahead: whether the stream ends right after its first event decides how it is sent. A
  // read left behind (the client gone, the stream errored) is settled by the cancel, never unhandled.
  const read = () => {
    const p = reader.read();
    p.catch(() => {});
    return p;
  };
  try {
    let next = read();
    for (let first = true; ; first = false) {
      const { done, value } = await next;
      if (done) break;
      next = read();
      clearTimeout(early);
      if (first && !headersSent && answerable) {
        // The transport ends a request's stream in the same turn as it writes the answer (or when
        // it closes: a lone notification then reaches the client with no answer either way).
        const message = soleSseMessage(value);
        if (message && (await endsNow(next))) return sendJsonAnswer(res, r.status, headers, message);
      }
      await write(value);
      if (res.destroyed) break;
    }
  } catch {
    // The stream was cancelled (client gone) or errored: nothing more can be sent.
  } finally {
    clearTimeout(early);
    res.off("close", gone);
    if (res.destroyed) gone();
    else if (!res.writableEnded) {
      sendHeaders();
      res.end();
    }
  }
}

function isEventStream(contentType: string | null): boolean {
  return contentType?.split(";")[0]?.trim().toLowerCase() === "text/event-stream";
}

/** Whether `next` (the stream's next read) says the stream has ended before the event loop's next turn. */
function endsNow(next: Promise<{ readonly done: boolean }>): Promise<boolean> {
  return new Promise((resolve) => {
    const late = setImmediate(() => resolve(false));
    next.then(
      (r) => {
        clearImmediate(late);
        resolve(r.done);
      },
      () => {
        clearImmediate(late);
        resolve(false);
      },
    );
  });
}

/** One JSON-RPC answer as an `application/json` body, in one write. */
function sendJsonAnswer(
  res: http.ServerResponse,
  status: number,
  sse: Record<string, string | string[]>,
  message: Uint8Array,
): void {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(sse)) if (k !== "content-type" && k !== "x-accel-buffering") headers[k] = v;
  headers["content-type"] = "application/json";
  headers["content-length"] = String(message.length);
  res.writeHead(status, headers);
  res.end(message);
}

/** Resolves when `res` can take more data, or when it closed (the caller stops then). */
function drained(res: http.ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.once("drain", done);
    res.once("close", done);
  });
}
