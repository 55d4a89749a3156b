import type { OAuthClientInformationFull } from "@modelcontextprotocol/client";
import { registerClient as sdkRegisterClient } from "@modelcontextprotocol/client";
import { OAuthError } from "./errors.js";
import { checkEndpoint, guardedFetch, type HttpOptions } from "./http.js";
import { rethrowOwn, sdkMetadata } from "./sdk.js";

/** The broker's client name in every dynamic registration. */
export const CLIENT_NAME = "slaude-connect";

/** A client registered with an authorization server. */
export interface RegisteredClient {
  readonly clientId: string;
  /** Only if the server issued one despite `token_endpoint_auth_method: none`; keep it sealed. */
  readonly clientSecret?: string;
  /** Ms since epoch when the secret expires; absent when it does not (or there is none). */
  readonly clientSecretExpiresAt?: number;
}

/** What to register: where the authorization server may redirect, and optionally which scopes. */
export interface RegistrationRequest {
  readonly registrationEndpoint: string;
  readonly redirectUris: readonly string[];
  readonly scopes?: readonly string[];
}

/**
 * Registers the broker as a public client (RFC 7591, through the SDK's `registerClient`):
 * authorization code + refresh token, PKCE, no client authentication. Throws OAuthError
 * `registration_failed` (with the HTTP status and the vendor's error token only), `network` or `insecure_endpoint`.
 */
export async function registerClient(req: RegistrationRequest, opts: HttpOptions = {}): Promise<RegisteredClient> {
  const endpoint = checkEndpoint(req.registrationEndpoint, "registration_endpoint", opts);
  if (req.redirectUris.length === 0)
    throw new OAuthError("registration_failed", "registration needs at least one redirect URI");
  const http = guardedFetch(opts, "client registration");
  let r: OAuthClientInformationFull;
  try {
    r = await sdkRegisterClient(endpoint.origin, {
      metadata: sdkMetadata({
        issuer: endpoint.origin,
        tokenEndpoint: endpoint.href,
        registrationEndpoint: endpoint.href,
      }),
      clientMetadata: {
        client_name: CLIENT_NAME,
        redirect_uris: [...req.redirectUris],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
        ...(req.scopes?.length ? { scope: req.scopes.join(" ") } : {}),
      },
      fetchFn: http.fetchFn,
    });
  } catch (err) {
    rethrowOwn(err);
    const last = http.last();
    const status = last?.status;
    const refused = status !== undefined && (status < 200 || status > 299);
    const detail = refused
      ? `refused (HTTP ${status}${last?.vendorError ? `, ${last.vendorError}` : ""})`
      : "returned an unexpected response";
    throw new OAuthError("registration_failed", `client registration at ${endpoint.host} ${detail}`, {
      ...(status !== undefined ? { status } : {}),
      ...(refused && last?.vendorError ? { vendorError: last.vendorError } : {}),
    });
  }
  if (!r.client_id)
    throw new OAuthError(
      "registration_failed",
      `client registration at ${endpoint.host} returned an unexpected response`,
    );
  return {
    clientId: r.client_id,
    ...(r.client_secret ? { clientSecret: r.client_secret } : {}),
    // RFC 7591: 0 means "never expires".
    ...(r.client_secret && r.client_secret_expires_at
      ? { clientSecretExpiresAt: r.client_secret_expires_at * 1000 }
      : {}),
  };
}
