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
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

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

/** Reads at most MAX_BODY_BYTES of a body, stopping (and cancelling the stream) as soon as it is over. */
async function readCapped(res: Response, step: string): Promise<string> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  const tooLarge = () => new OAuthError("invalid_response", `${step}: response too large`, { status: res.status });
  if (declared > MAX_BODY_BYTES) {
    await res.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > MAX_BODY_BYTES) {
        await reader.cancel().catch(() => undefined);
        throw tooLarge();
      }
      chunks.push(value);
    }
  } catch (cause) {
    if (cause instanceof OAuthError) throw cause;
    // The cause is about the connection (reset, timeout), never the body's text.
    throw new OAuthError("network", `${step}: response was cut off`, { cause, status: res.status });
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * Re-shapes a body for the SDK, which reads JSON only: a form-encoded body (vendors that ignore
 * `Accept`) becomes JSON. Returns the text to hand on and the parsed value, if any.
 */
function normalise(text: string, contentType: string | null): { text: string; json: unknown } {
  if (contentType?.includes("application/x-www-form-urlencoded")) {
    const json = Object.fromEntries(new URLSearchParams(text));
    return { text: JSON.stringify(json), json };
  }
  try {
    return { text, json: JSON.parse(text) as unknown };
  } catch {
    return { text, json: undefined };
  }
}

/**
 * Builds the fetch one SDK operation (`step`, named in errors) sends through: https-only endpoints
 * (redirect targets included), no automatic redirects, a timeout on the clock, a capped body, and
 * I/O failures as OAuthError `network`. `reshape` may adjust a parsed 2xx JSON body for the SDK.
 */
export function guardedFetch(opts: HttpOptions, step: string, reshape?: (json: unknown) => unknown): GuardedFetch {
  const doFetch = opts.fetch ?? fetch;
  const clock = opts.clock ?? systemClock;
  let last: Observed | undefined;
  const fetchFn: FetchLike = async (input, init) => {
    const url = checkEndpoint(String(input), `${step} URL`);
    const abort = new AbortController();
    const timer = clock.setTimeout(() => abort.abort(), opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, { unref: true });
    try {
      let res: Response;
      try {
        res = await doFetch(url, { ...init, redirect: "manual", signal: abort.signal });
      } catch (cause) {
        // The cause is a fetch/undici error about the connection, never the request body.
        throw new OAuthError("network", `${step}: could not reach ${url.host}`, { cause });
      }
      const body = normalise(await readCapped(res, step), res.headers.get("content-type"));
      const vendorError = vendorErrorOf(body.json);
      last = { url: url.href, status: res.status, ...(vendorError ? { vendorError } : {}) };
      const headers = new Headers(res.headers);
      headers.delete("content-length");
      let text = body.text;
      if (body.json !== undefined) {
        headers.set("content-type", "application/json");
        if (reshape && res.status >= 200 && res.status < 300) text = JSON.stringify(reshape(body.json));
      }
      return new Response(NULL_BODY_STATUSES.has(res.status) ? null : text, { status: res.status, headers });
    } finally {
      timer.cancel();
    }
  };
  return { fetchFn, last: () => last };
}
