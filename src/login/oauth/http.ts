import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { z } from "zod";
import { systemClock, type Clock } from "../../clock/clock.js";
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
}

const DEFAULT_TIMEOUT_MS = 15_000;
/** OAuth metadata and token responses are small; anything larger is refused. */
const MAX_BODY_BYTES = 256 * 1024;
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]", "::1"]);

/**
 * Parses an endpoint URL and refuses anything that would carry a code, token or secret in the
 * clear: only https, or http to a loopback host (local fixtures and development).
 */
export function checkEndpoint(raw: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OAuthError("insecure_endpoint", `${what} is not a valid URL`);
  }
  const ok = url.protocol === "https:" || (url.protocol === "http:" && LOOPBACK.has(url.hostname));
  if (!ok) throw new OAuthError("insecure_endpoint", `${what} must use https (http only for loopback hosts)`);
  if (url.username || url.password) throw new OAuthError("insecure_endpoint", `${what} must not embed credentials`);
  return url;
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
 * Builds the fetch one SDK operation (`step`, named in errors) sends through: https-only endpoints
 * (redirect targets included), no automatic redirects, a timeout on the clock, a capped body, and
 * I/O failures as OAuthError `network`. `reshape` may adjust a parsed 2xx JSON body for the SDK.
 */
export function guardedFetch(opts: HttpOptions, step: string, reshape: (json: unknown) => unknown = (j) => j): GuardedFetch {
  let last: Observed | undefined;
  const fetchFn: FetchLike = async (input, init) => {
    const url = checkEndpoint(String(input), `${step} URL`);
    const abort = new AbortController();
    const timer = (opts.clock ?? systemClock).setTimeout(() => abort.abort(), opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, { unref: true });
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
