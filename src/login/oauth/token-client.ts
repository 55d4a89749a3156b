import { timingSafeEqual } from "node:crypto";
import { z } from "zod";
import type { Clock } from "../../clock/clock.js";
import type { CredentialInput } from "../../vault/credential.js";
import { OAuthError, type OAuthErrorCode } from "./errors.js";
import { checkEndpoint, parseBody, readText, send, vendorErrorOf, type HttpOptions } from "./http.js";

// The authorization-code + PKCE flow and refresh (RFC 6749, RFC 7636, RFC 8707 resource
// indicators). Results have the shape of the vault's oauth credential.

/** Tokens as the vault stores them. */
export type OAuthTokens = Extract<CredentialInput, { kind: "oauth" }>;

/** How the token client sends requests and reads time (for `expiresAt`). */
export interface TokenClientOptions extends HttpOptions {
  readonly clock: Clock;
  /** How a confidential client authenticates (default HTTP Basic, RFC 6749 §2.3.1); public clients send only client_id. */
  readonly clientAuth?: "client_secret_basic" | "client_secret_post";
}

/** Parameters of the authorization request (RFC 6749 §4.1.1 + PKCE). */
export interface AuthorizeUrlParams {
  readonly authorizationEndpoint: string;
  readonly clientId: string;
  readonly redirectUri: string;
  readonly scopes: readonly string[];
  readonly state: string;
  readonly challenge: string;
  /** Vendor extras from the registry (e.g. `access_type=offline`); they cannot override the parameters above. */
  readonly extra?: Readonly<Record<string, string>>;
  /** RFC 8707 resource indicator (remote MCP servers). */
  readonly resource?: string;
}

/** The URL that starts the login in the confined browser. Throws `insecure_endpoint` for a non-https endpoint. */
export function buildAuthorizeUrl(p: AuthorizeUrlParams): string {
  const url = checkEndpoint(p.authorizationEndpoint, "authorization endpoint");
  for (const [k, v] of Object.entries(p.extra ?? {})) url.searchParams.set(k, v);
  // Set last so a registry extra can never weaken PKCE or redirect the code elsewhere.
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", p.clientId);
  url.searchParams.set("redirect_uri", p.redirectUri);
  if (p.scopes.length) url.searchParams.set("scope", p.scopes.join(" "));
  else url.searchParams.delete("scope");
  url.searchParams.set("state", p.state);
  url.searchParams.set("code_challenge", p.challenge);
  url.searchParams.set("code_challenge_method", "S256");
  if (p.resource) url.searchParams.set("resource", p.resource);
  return url.href;
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Reads the redirect the authorization server sent the browser to: checks that it is our
 * redirect URI and carries our `state`, and returns the code. Throws `state_mismatch`,
 * `access_denied` (the user or server refused) or `invalid_response`.
 */
export function readAuthorizationResponse(redirectUrl: string, expected: { redirectUri: string; state: string }): string {
  let url: URL;
  try {
    url = new URL(redirectUrl);
  } catch {
    throw new OAuthError("invalid_response", "the authorization redirect is not a URL");
  }
  const want = new URL(expected.redirectUri);
  if (url.origin !== want.origin || url.pathname !== want.pathname) throw new OAuthError("invalid_response", "the authorization redirect went to an unexpected address");
  const state = url.searchParams.get("state");
  if (state === null || !sameSecret(state, expected.state)) throw new OAuthError("state_mismatch", "the authorization redirect does not belong to this login");
  const error = url.searchParams.get("error");
  if (error !== null) {
    const vendorError = /^[A-Za-z0-9_.-]{1,64}$/.test(error) ? error : undefined;
    throw new OAuthError("access_denied", `the authorization server refused the login${vendorError ? ` (${vendorError})` : ""}`, vendorError ? { vendorError } : undefined);
  }
  const code = url.searchParams.get("code");
  if (!code) throw new OAuthError("invalid_response", "the authorization redirect carries no code");
  return code;
}

/** RFC 6749 §5.1 token response; unknown fields are tolerated. */
const tokenResponseSchema = z
  .object({
    access_token: z.string().min(1),
    token_type: z.string().min(1).optional(),
    expires_in: z.union([z.number().nonnegative(), z.string().regex(/^\d+$/).transform(Number)]).optional(),
    refresh_token: z.string().min(1).optional(),
    scope: z.string().optional(),
  })
  .loose();

type TokenResponse = z.output<typeof tokenResponseSchema>;

function mapVendorError(vendorError: string | undefined, status: number): OAuthErrorCode {
  switch (vendorError) {
    case "invalid_grant":
      return "invalid_grant";
    case "invalid_client":
    case "unauthorized_client":
      return "invalid_client";
    case "invalid_request":
    case "unsupported_grant_type":
    case "invalid_scope":
      return "invalid_request";
    case "temporarily_unavailable":
    case "server_error":
      return "server_error";
    default:
      return status >= 500 || status === 429 ? "server_error" : status === 401 ? "invalid_client" : status >= 400 && status < 500 ? "invalid_request" : "server_error";
  }
}

interface Client {
  readonly tokenEndpoint: string;
  readonly clientId: string;
  readonly clientSecret?: string;
}

/** POSTs a token request and returns the parsed success body; failures become OAuthError. */
async function tokenRequest(client: Client, params: Record<string, string>, opts: TokenClientOptions, step: string): Promise<TokenResponse> {
  const endpoint = checkEndpoint(client.tokenEndpoint, "token endpoint");
  const form = new URLSearchParams(params);
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded", accept: "application/json" };
  if (client.clientSecret && (opts.clientAuth ?? "client_secret_basic") === "client_secret_basic") {
    const enc = (s: string) => encodeURIComponent(s);
    headers["authorization"] = `Basic ${Buffer.from(`${enc(client.clientId)}:${enc(client.clientSecret)}`).toString("base64")}`;
  } else {
    form.set("client_id", client.clientId);
    if (client.clientSecret) form.set("client_secret", client.clientSecret);
  }
  const res = await send(endpoint, { method: "POST", headers, body: form.toString() }, opts, step);
  const body = parseBody(await readText(res, step), res.headers.get("content-type"));
  const parsed = res.status === 200 ? tokenResponseSchema.safeParse(body) : undefined;
  if (parsed?.success) return parsed.data;
  // Some vendors answer 200 with an error body; treat it like the 400 it should have been.
  const vendorError = vendorErrorOf(body);
  if (res.status === 200 && !vendorError) throw new OAuthError("invalid_response", `${step}: ${endpoint.host} returned an unexpected response`, { status: res.status });
  const code = mapVendorError(vendorError, res.status === 200 ? 400 : res.status);
  throw new OAuthError(code, `${step} failed at ${endpoint.host} (HTTP ${res.status}${vendorError ? `, ${vendorError}` : ""})`, {
    status: res.status,
    ...(vendorError ? { vendorError } : {}),
  });
}

/** Normalises the token type's case (`bearer` → `Bearer`), since it is pasted into headers. */
function tokenType(raw: string | undefined): string {
  return !raw || raw.toLowerCase() === "bearer" ? "Bearer" : raw;
}

function toTokens(r: TokenResponse, issuedAt: number, previous?: { refreshToken: string; scope?: string }): OAuthTokens {
  const refreshToken = r.refresh_token ?? previous?.refreshToken;
  const scope = r.scope ?? previous?.scope;
  return {
    kind: "oauth",
    accessToken: r.access_token,
    tokenType: tokenType(r.token_type),
    ...(refreshToken ? { refreshToken } : {}),
    ...(r.expires_in !== undefined ? { expiresAt: issuedAt + Math.floor(r.expires_in) * 1000 } : {}),
    ...(scope !== undefined && scope !== "" ? { scope } : {}),
  };
}

/** An authorization code to redeem, with the PKCE verifier of the flow that obtained it. */
export interface CodeExchange extends Client {
  readonly code: string;
  readonly redirectUri: string;
  readonly verifier: string;
  readonly resource?: string;
}

/** Redeems an authorization code (RFC 6749 §4.1.3 + PKCE). Throws OAuthError (`invalid_grant` for a bad code or verifier). */
export async function exchangeCode(req: CodeExchange, opts: TokenClientOptions): Promise<OAuthTokens> {
  // Expiry counts from before the request: a token is never believed to live longer than it does.
  const issuedAt = opts.clock.now();
  const r = await tokenRequest(
    req,
    {
      grant_type: "authorization_code",
      code: req.code,
      redirect_uri: req.redirectUri,
      code_verifier: req.verifier,
      ...(req.resource ? { resource: req.resource } : {}),
    },
    opts,
    "code exchange",
  );
  return toTokens(r, issuedAt);
}

/** A refresh token to redeem; `scope` is the current credential's, kept if the server omits it. */
export interface RefreshRequest extends Client {
  readonly refreshToken: string;
  readonly scope?: string;
  readonly resource?: string;
}

/**
 * Redeems a refresh token (RFC 6749 §6). A response without a new refresh token keeps the old one.
 * Throws OAuthError: `invalid_grant` when the token was rejected (the user must log in again),
 * `network` / `server_error` when it may work later.
 */
export async function refresh(req: RefreshRequest, opts: TokenClientOptions): Promise<OAuthTokens> {
  const issuedAt = opts.clock.now();
  const r = await tokenRequest(
    req,
    { grant_type: "refresh_token", refresh_token: req.refreshToken, ...(req.resource ? { resource: req.resource } : {}) },
    opts,
    "token refresh",
  );
  return toTokens(r, issuedAt, { refreshToken: req.refreshToken, ...(req.scope !== undefined ? { scope: req.scope } : {}) });
}
