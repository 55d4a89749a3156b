import type http from "node:http";

// node:http -> web Request, for the SDK's web-standard Streamable HTTP transport (its Response goes
// back to node in web-answer.ts). We hold that transport ourselves (not the node wrapper, which
// hides it) so a session can also be fed an internal request: the replayed initialize that
// rebuilds a session opened on another replica.

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
