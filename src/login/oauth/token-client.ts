import type { OAuthTokens as SdkTokens } from "@modelcontextprotocol/client";
import { exchangeAuthorization, refreshAuthorization } from "@modelcontextprotocol/client";
import type { Clock } from "../../clock/clock.js";
import type { CredentialInput } from "../../vault/credential.js";
import { OAuthError, type OAuthErrorCode } from "./errors.js";
import { checkEndpoint, guardedFetch, type HttpOptions } from "./http.js";
import { rethrowOwn, sdkMetadata } from "./sdk.js";

// The back half of the authorization-code flow and refresh (RFC 6749, RFC 7636, RFC 8707) on the
// SDK's `exchangeAuthorization` / `refreshAuthorization`. Results have the shape of the vault's
// oauth credential; failures are classified from the status and vendor error token we observed.

/** Tokens as the vault stores them. */
export type OAuthTokens = Extract<CredentialInput, { kind: "oauth" }>;

/** How the token client sends requests and reads time (for `expiresAt` and the request timeout). */
export interface TokenClientOptions extends HttpOptions {
  readonly clock: Clock;
}

/** The client a token request is made as. */
interface Client {
  readonly tokenEndpoint: string;
  readonly clientId: string;
  readonly clientSecret?: string;
}

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
      return status >= 500 || status === 429
        ? "server_error"
        : status === 401
          ? "invalid_client"
          : status >= 400 && status < 500
            ? "invalid_request"
            : "server_error";
  }
}

/**
 * RFC 6749 §2.3.1 client authentication, handed to the SDK: HTTP Basic with form-encoded id and
 * secret for a confidential client (the SDK's own encodes neither), `client_id` alone for a public one.
 */
function clientAuthentication(client: Client): (headers: Headers, params: URLSearchParams) => void {
  return (headers, params) => {
    if (!client.clientSecret) {
      params.set("client_id", client.clientId);
      return;
    }
    const enc = (s: string) => encodeURIComponent(s);
    headers.set(
      "authorization",
      `Basic ${Buffer.from(`${enc(client.clientId)}:${enc(client.clientSecret)}`).toString("base64")}`,
    );
  };
}

/** Vendors that omit `token_type` (the SDK requires it) mean Bearer, as before. */
function defaultTokenType(json: unknown): unknown {
  if (typeof json !== "object" || json === null || Array.isArray(json) || "token_type" in json) return json;
  return { ...json, token_type: "Bearer" };
}

/** What every SDK token call takes, prepared by `tokenRequest`, with the server URL. */
type TokenCall = Pick<
  Parameters<typeof refreshAuthorization>[1],
  "metadata" | "clientInformation" | "addClientAuthentication" | "fetchFn"
> & { server: string };

/** Runs one SDK token request through our guarded fetch; any failure becomes an OAuthError without vendor text. */
async function tokenRequest(
  client: Client,
  opts: TokenClientOptions,
  step: string,
  call: (c: TokenCall) => Promise<SdkTokens>,
): Promise<SdkTokens> {
  const endpoint = checkEndpoint(client.tokenEndpoint, "token endpoint", opts);
  const http = guardedFetch(opts, step, defaultTokenType);
  let r: SdkTokens;
  try {
    r = await call({
      server: endpoint.origin,
      metadata: sdkMetadata({ issuer: endpoint.origin, tokenEndpoint: endpoint.href }),
      clientInformation: {
        client_id: client.clientId,
        ...(client.clientSecret ? { client_secret: client.clientSecret } : {}),
      },
      addClientAuthentication: clientAuthentication(client),
      fetchFn: http.fetchFn,
    });
  } catch (err) {
    rethrowOwn(err);
    const last = http.last();
    if (!last) throw new OAuthError("invalid_response", `${step}: no request could be made to ${endpoint.host}`);
    // Some vendors answer 200 with an error body; treat it like the 400 it should have been.
    const { status, vendorError } = last;
    const ok = status >= 200 && status < 300;
    if (ok && !vendorError)
      throw new OAuthError("invalid_response", `${step}: ${endpoint.host} returned an unexpected response`, { status });
    throw new OAuthError(
      mapVendorError(vendorError, ok ? 400 : status),
      `${step} failed at ${endpoint.host} (HTTP ${status}${vendorError ? `, ${vendorError}` : ""})`,
      {
        status,
        ...(vendorError ? { vendorError } : {}),
      },
    );
  }
  const expiresIn = r.expires_in;
  if (!r.access_token || (expiresIn !== undefined && !(Number.isFinite(expiresIn) && expiresIn >= 0))) {
    throw new OAuthError("invalid_response", `${step}: ${endpoint.host} returned an unexpected response`, {
      status: http.last()?.status ?? 0,
    });
  }
  return r;
}

/** Normalises the token type's case (`bearer` → `Bearer`), since it is pasted into headers. */
function tokenType(raw: string): string {
  return raw.toLowerCase() === "bearer" ? "Bearer" : raw;
}

function toTokens(r: SdkTokens, issuedAt: number, previous?: { refreshToken: string; scope?: string }): OAuthTokens {
  const refreshToken = r.refresh_token || previous?.refreshToken;
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
  const r = await tokenRequest(req, opts, "code exchange", ({ server, ...c }) =>
    exchangeAuthorization(server, {
      ...c,
      authorizationCode: req.code,
      codeVerifier: req.verifier,
      redirectUri: req.redirectUri,
      ...(req.resource ? { resource: req.resource } : {}),
    }),
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
  const r = await tokenRequest(req, opts, "token refresh", ({ server, ...c }) =>
    refreshAuthorization(server, {
      ...c,
      refreshToken: req.refreshToken,
      ...(req.resource ? { resource: req.resource } : {}),
    }),
  );
  return toTokens(r, issuedAt, {
    refreshToken: req.refreshToken,
    ...(req.scope !== undefined ? { scope: req.scope } : {}),
  });
}
