import { z } from "zod";
import { OAuthError } from "./errors.js";

// The HTTP edge of the OAuth client: endpoint checks, timeouts, bounded bodies, JSON parsing.
// Nothing here puts a body or a header value into an error message.

/** How OAuth requests are sent; tests and the composition root may replace fetch or the timeout. */
export interface HttpOptions {
  readonly fetch?: typeof fetch;
  /** Per-request timeout in ms (default 15 s). */
  readonly timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 15_000;
/** OAuth metadata and token responses are small; anything larger is refused unread. */
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

/** Sends one request with a timeout and no automatic redirects; I/O failures become `network`. */
export async function send(url: URL, init: RequestInit, opts: HttpOptions, step: string): Promise<Response> {
  const doFetch = opts.fetch ?? fetch;
  try {
    return await doFetch(url, { ...init, redirect: "manual", signal: AbortSignal.timeout(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS) });
  } catch (cause) {
    // The cause is a fetch/undici error about the connection, never the request body.
    throw new OAuthError("network", `${step}: could not reach ${url.host}`, { cause });
  }
}

/** Reads a response body as text, refusing bodies over the size cap. */
export async function readText(res: Response, step: string): Promise<string> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw new OAuthError("invalid_response", `${step}: response too large`, { status: res.status });
  let text: string;
  try {
    text = await res.text();
  } catch (cause) {
    throw new OAuthError("network", `${step}: response was cut off`, { cause, status: res.status });
  }
  if (Buffer.byteLength(text) > MAX_BODY_BYTES) throw new OAuthError("invalid_response", `${step}: response too large`, { status: res.status });
  return text;
}

/**
 * Parses an OAuth response body: JSON, or (for vendors that ignore `Accept`) a form-encoded body.
 * Returns undefined if it is neither.
 */
export function parseBody(text: string, contentType: string | null): unknown {
  if (contentType?.includes("application/x-www-form-urlencoded")) return Object.fromEntries(new URLSearchParams(text));
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The RFC 6749 §5.2 error body; only `error` is ever surfaced, and only if it is a plain token. */
const errorBodySchema = z.object({ error: z.string() }).loose();

/** The vendor's `error` code from an error body, if it is a short plain token. */
export function vendorErrorOf(body: unknown): string | undefined {
  const parsed = errorBodySchema.safeParse(body);
  if (!parsed.success) return undefined;
  return /^[A-Za-z0-9_.-]{1,64}$/.test(parsed.data.error) ? parsed.data.error : undefined;
}

/** Fetches a JSON document with GET; undefined on 404 (the caller tries the next candidate). */
export async function getJson(url: URL, opts: HttpOptions, step: string): Promise<{ status: number; body: unknown } | undefined> {
  const res = await send(url, { method: "GET", headers: { accept: "application/json" } }, opts, step);
  if (res.status === 404 || res.status === 405 || res.status === 410) {
    await res.body?.cancel();
    return undefined;
  }
  const text = await readText(res, step);
  return { status: res.status, body: parseBody(text, res.headers.get("content-type")) };
}
