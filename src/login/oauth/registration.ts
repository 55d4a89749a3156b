import { z } from "zod";
import { OAuthError } from "./errors.js";
import { checkEndpoint, parseBody, readText, send, vendorErrorOf, type HttpOptions } from "./http.js";

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

/** RFC 7591 §3.2.1 registration response; unknown fields are tolerated. */
const registrationResponseSchema = z
  .object({
    client_id: z.string().min(1),
    client_secret: z.string().min(1).optional(),
    client_secret_expires_at: z.number().nonnegative().optional(),
  })
  .loose();

/** What to register: where the authorization server may redirect, and optionally which scopes. */
export interface RegistrationRequest {
  readonly registrationEndpoint: string;
  readonly redirectUris: readonly string[];
  readonly scopes?: readonly string[];
}

/**
 * Registers the broker as a public client (RFC 7591): authorization code + refresh token, PKCE,
 * no client authentication. Throws OAuthError `registration_failed`, `network` or `insecure_endpoint`.
 */
export async function registerClient(req: RegistrationRequest, opts: HttpOptions = {}): Promise<RegisteredClient> {
  const endpoint = checkEndpoint(req.registrationEndpoint, "registration_endpoint");
  if (req.redirectUris.length === 0) throw new OAuthError("registration_failed", "registration needs at least one redirect URI");
  const metadata = {
    client_name: CLIENT_NAME,
    redirect_uris: req.redirectUris,
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
    ...(req.scopes && req.scopes.length ? { scope: req.scopes.join(" ") } : {}),
  };
  const res = await send(
    endpoint,
    { method: "POST", headers: { "content-type": "application/json", accept: "application/json" }, body: JSON.stringify(metadata) },
    opts,
    "client registration",
  );
  const body = parseBody(await readText(res, "client registration"), res.headers.get("content-type"));
  if (res.status !== 201 && res.status !== 200) {
    const vendorError = vendorErrorOf(body);
    throw new OAuthError("registration_failed", `client registration at ${endpoint.host} refused (HTTP ${res.status}${vendorError ? `, ${vendorError}` : ""})`, {
      status: res.status,
      ...(vendorError ? { vendorError } : {}),
    });
  }
  const parsed = registrationResponseSchema.safeParse(body);
  if (!parsed.success) throw new OAuthError("registration_failed", `client registration at ${endpoint.host} returned an unexpected response`, { status: res.status });
  const r = parsed.data;
  return {
    clientId: r.client_id,
    ...(r.client_secret ? { clientSecret: r.client_secret } : {}),
    // RFC 7591: 0 means "never expires".
    ...(r.client_secret && r.client_secret_expires_at ? { clientSecretExpiresAt: r.client_secret_expires_at * 1000 } : {}),
  };
}
