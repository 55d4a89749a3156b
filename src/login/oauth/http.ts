import type { FetchLike } from "@modelcontextprotocol/client";
import { z } from "zod";
import { type Clock, systemClock } from "../../clock/clock.js";
import { type EndpointSource, judgeEndpoint, refusalText } from "./endpoint-policy.js";
import { OAuthError } from "./errors.js";

// The HTTP edge under the MCP SDK's OAuth client: every request the SDK sends goes through the
// fetch built here, which checks the endpoint, times out on our clock, caps the body and hands
// the SDK a re-built Response. What it saw (status, the vendor's `error` token) is kept so a
// failure is reported from our own reading, never from the SDK's message (which can quote a body).

/** How OAuth requests are sent; tests and the composition root may replace fetch, the timeout or the clock. */
export interface HttpOptions {
  readonly fetch?: typeof fetch;
  /** Per-request timeout in ms (default 15 s), armed on `clock`. */
  readonly timeoutMs?: number;
  readonly clock?: Clock;
  /** NODE_ENV=production: plain http is refused everywhere, loopback included (default false). */
  readonly production?: boolean;
}

const DEFAULT_TIMEOUT_MS = 15_000;
/** OAuth metadata and token responses are small; anything larger is refused. */
const MAX_BODY_BYTES = 256 * 1024;

/**
 * Parses a URL the broker is about to use and refuses it with OAuthError `insecure_endpoint`
 * unless `judgeEndpoint` accepts it: https (plain http only to loopback, never in production),
 * no embedded credentials and, for a `discovered` one, no downgrade and no foreign origin.
 */
export function checkEndpoint(
  raw: string,
  what: string,
  opts: Pick<HttpOptions, "production">,
  source: EndpointSource = { kind: "configured" },
): URL {
  const v = judgeEndpoint(raw, source, { production: opts.production ?? false });
  if (!v.ok) throw new OAuthError("insecure_endpoint", refusalText(what, v.reason, raw, source));
  return v.url;
}

/** `checkEndpoint` for a URL named by a document fetched from `from`, which the registry entry may widen by `allowedOrigins`. */
export function checkDiscovered(
  raw: string,
  what: string,
  from: URL,
  opts: Pick<HttpOptions, "production"> & { readonly allowedOrigins?: readonly string[] },
): URL {
  return checkEndpoint(raw, what, opts, { kind: "discovered", from, allowedOrigins: opts.allowedOrigins ?? [] });
}

/** The RFC 6749 §5.2 error body; only `error` is ever surfaced, and only if it is a plain token. */
const errorBodySchema = z.object({ error: z.string() }).loose();

/** The vendor's `error` code from an error body, if it is a short plain token. */
export function vendorErrorOf(body: unknown): string | undefined {
  const parsed = errorBodySchema.safeParse(body);
  if (!parsed.success) return undefined;
  return /^[A-Za-z0-9_.-]{1,64}$/.test(parsed.data.error) ? parsed.data.error : undefined;
}

/** What the guarded fetch last received: enough to classify a failure, nothing a secret could hide in. */
export interface Observed {
  readonly url: string;
  readonly status: number;
  readonly vendorError?: string;
}

/** A fetch for one SDK operation, and what it saw. */
export interface GuardedFetch {
  readonly fetchFn: FetchLike;
  /** The last response received, if any. */
  last(): Observed | undefined;
}

/** Reads at most MAX_BODY_BYTES of a body, cancelling the stream as soon as it is over. */
async function readCapped(res: Response, step: string): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = Number(res.headers.get("content-length") ?? "0") > MAX_BODY_BYTES ? Infinity : 0;
  const reader = res.body?.getReader();
  try {
    while (reader && size <= MAX_BODY_BYTES) {
      const { done, value } = await reader.read();
      if (done) return Buffer.concat(chunks).toString("utf8");
      size += value.byteLength;
      chunks.push(value);
    }
  } catch (cause) {
    // The cause is about the connection (reset, timeout), never the body's text.
    throw new OAuthError("network", `${step}: response was cut off`, { cause, status: res.status });
  }
  if (!reader) return "";
  await reader.cancel().catch(() => undefined);
  throw new OAuthError("invalid_response", `${step}: response too large`, { status: res.status });
}

/** The body as the SDK (which reads JSON only) should see it: a form-encoded one (vendors that ignore `Accept`) becomes JSON. */
function parse(text: string, contentType: string | null): unknown {
  if (contentType?.includes("application/x-www-form-urlencoded")) return Object.fromEntries(new URLSearchParams(text));
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Builds the fetch one SDK operation (`step`, named in errors) sends through: every URL passes
 * `checkEndpoint` (the floor: https, loopback http outside production), no automatic redirects, a timeout on the clock, a capped body, and
 * I/O failures as OAuthError `network`. `reshape` may adjust a parsed 2xx JSON body for the SDK.
 */
export function guardedFetch(
  opts: HttpOptions,
  step: string,
  reshape: (json: unknown) => unknown = (j) => j,
): GuardedFetch {
  let last: Observed | undefined;
  const fetchFn: FetchLike = async (input, init) => {
    const url = checkEndpoint(String(input), `${step} URL`, opts);
    const abort = new AbortController();
    const timer = (opts.clock ?? systemClock).setTimeout(() => abort.abort(), opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, {
      unref: true,
    });
    try {
      let res: Response;
      try {
        res = await (opts.fetch ?? fetch)(url, { ...init, redirect: "manual", signal: abort.signal });
      } catch (cause) {
        // The cause is a fetch/undici error about the connection, never the request body.
        throw new OAuthError("network", `${step}: could not reach ${url.host}`, { cause });
      }
      const text = await readCapped(res, step);
      const json = parse(text, res.headers.get("content-type"));
      const vendorError = vendorErrorOf(json);
      last = { url: url.href, status: res.status, ...(vendorError ? { vendorError } : {}) };
      const headers = new Headers(res.headers);
      headers.delete("content-length");
      if (json !== undefined) headers.set("content-type", "application/json");
      const body = json === undefined ? text : JSON.stringify(res.ok ? reshape(json) : json);
      return new Response([204, 205, 304].includes(res.status) ? null : body, { status: res.status, headers });
    } finally {
      timer.cancel();
    }
  };
  return { fetchFn, last: () => last };
}
