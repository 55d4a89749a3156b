import { randomBytes, timingSafeEqual } from "node:crypto";
import { startAuthorization } from "@modelcontextprotocol/client";
import { OAuthError } from "./errors.js";
import { checkEndpoint } from "./http.js";
import { rethrowOwn, sdkMetadata } from "./sdk.js";

// The front half of the authorization-code flow (RFC 6749 §4.1, RFC 7636 PKCE, RFC 8707): the URL
// the confined browser opens (built by the SDK's `startAuthorization`, which also makes the PKCE
// pair), and the check of the redirect it comes back with.

/** An unguessable `state` value (256 bits, base64url) binding the redirect to the flow that asked for it. */
export function randomState(): string {
  return randomBytes(32).toString("base64url");
}

/** Parameters of the authorization request. */
export interface AuthorizationParams {
  readonly authorizationEndpoint: string;
  readonly clientId: string;
  readonly redirectUri: string;
  readonly scopes: readonly string[];
  readonly state: string;
  /** Vendor extras from the registry (e.g. `access_type=offline`); they cannot override the parameters the flow sets. */
  readonly extra?: Readonly<Record<string, string>>;
  /** RFC 8707 resource indicator (remote MCP servers). */
  readonly resource?: string;
  /** NODE_ENV=production: a plain http endpoint is refused, loopback included. */
  readonly production?: boolean;
}

/** The URL that starts the login, and the PKCE verifier that must redeem its code (kept server-side). */
export interface AuthorizationStart {
  readonly url: string;
  readonly verifier: string;
}

/** Parameters only the flow sets: a registry extra can never weaken PKCE or send the code elsewhere. */
const RESERVED = new Set([
  "response_type",
  "client_id",
  "redirect_uri",
  "scope",
  "state",
  "code_challenge",
  "code_challenge_method",
  "resource",
]);

/**
 * Builds the authorization URL with a fresh S256 PKCE pair (SDK `startAuthorization`), keeping
 * the endpoint's own query and adding registry extras. Throws `insecure_endpoint` for a non-https endpoint.
 */
export async function beginAuthorization(p: AuthorizationParams): Promise<AuthorizationStart> {
  const endpoint = checkEndpoint(p.authorizationEndpoint, "authorization endpoint", p);
  let started: { authorizationUrl: URL; codeVerifier: string };
  try {
    started = await startAuthorization(endpoint.origin, {
      metadata: sdkMetadata({
        issuer: endpoint.origin,
        authorizationEndpoint: endpoint.href,
        tokenEndpoint: endpoint.href,
      }),
      clientInformation: { client_id: p.clientId },
      redirectUrl: p.redirectUri,
      state: p.state,
      ...(p.scopes.length ? { scope: p.scopes.join(" ") } : {}),
      ...(p.resource ? { resource: p.resource } : {}),
    });
  } catch (err) {
    rethrowOwn(err);
    throw new OAuthError("invalid_request", "the authorization request could not be built");
  }
  const url = started.authorizationUrl;
  for (const [k, v] of Object.entries(p.extra ?? {})) if (!RESERVED.has(k)) url.searchParams.set(k, v);
  return { url: url.href, verifier: started.codeVerifier };
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
export function readAuthorizationResponse(
  redirectUrl: string,
  expected: { redirectUri: string; state: string },
): string {
  let url: URL;
  try {
    url = new URL(redirectUrl);
  } catch {
    throw new OAuthError("invalid_response", "the authorization redirect is not a URL");
  }
  const want = new URL(expected.redirectUri);
  if (url.origin !== want.origin || url.pathname !== want.pathname)
    throw new OAuthError("invalid_response", "the authorization redirect went to an unexpected address");
  const state = url.searchParams.get("state");
  if (state === null || !sameSecret(state, expected.state))
    throw new OAuthError("state_mismatch", "the authorization redirect does not belong to this login");
  const error = url.searchParams.get("error");
  if (error !== null) {
    const vendorError = /^[A-Za-z0-9_.-]{1,64}$/.test(error) ? error : undefined;
    throw new OAuthError(
      "access_denied",
      `the authorization server refused the login${vendorError ? ` (${vendorError})` : ""}`,
      vendorError ? { vendorError } : undefined,
    );
  }
  const code = url.searchParams.get("code");
  if (!code) throw new OAuthError("invalid_response", "the authorization redirect carries no code");
  return code;
}
