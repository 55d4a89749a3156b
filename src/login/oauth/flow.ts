import type { Clock } from "../../clock/clock.js";
import type { Service } from "../../config/registry.js";
import type { LoginSession } from "../../store/records.js";
import type { OAuthFlow, OAuthFlowFactory } from "../ports.js";
import { beginAuthorization, randomState, readAuthorizationResponse } from "./authorize.js";
import { discoverOAuth } from "./discovery.js";
import { OAuthError } from "./errors.js";
import type { HttpOptions } from "./http.js";
import { registerClient } from "./registration.js";
import { exchangeCode } from "./token-client.js";

/** Settings of the OAuth capture strategy. */
export interface OAuthFlowSettings {
  readonly publicUrl: string;
  readonly clock: Clock;
  /** Reads a client secret by the env var name the registry gives (config/ owns the environment). */
  readonly secretOf: (envName: string) => string | undefined;
  readonly http?: HttpOptions;
}

/** The redirect URI every flow uses; intercepted inside the confined browser, never reached over the network. */
export function oauthRedirectUri(publicUrl: string): string {
  return `${publicUrl}/login/callback`;
}

/** The registry's capture config of an OAuth service. */
type OAuthCapture = Extract<Service["entry"]["capture"], { strategy: "oauth" }>;

/** Where a flow sends the user and redeems the code, and as which client. */
interface FlowClient {
  readonly authorizationEndpoint: string;
  readonly tokenEndpoint: string;
  readonly clientId: string;
  readonly clientSecret?: string;
  readonly resource?: string;
  /** Registered for this login: it must travel with the tokens, since only it can refresh them. */
  readonly dynamic: boolean;
}

/** The endpoints and client for a service: from the registry, or discovered (registering a client when none is configured). */
async function flowClient(
  service: Service,
  c: OAuthCapture,
  redirectUri: string,
  settings: OAuthFlowSettings,
): Promise<FlowClient> {
  const secret = (): { clientSecret?: string } => {
    if (!c.clientSecretEnv) return {};
    const clientSecret = settings.secretOf(c.clientSecretEnv);
    if (!clientSecret)
      throw new OAuthError(
        "client_unknown",
        `${c.clientSecretEnv} is not set (the client secret of service "${service.name}")`,
      );
    return { clientSecret };
  };
  if (!c.discovery) {
    return {
      authorizationEndpoint: c.authorizationUrl!,
      tokenEndpoint: c.tokenUrl!,
      clientId: c.clientId!,
      ...secret(),
      dynamic: false,
    };
  }
  const http = { ...settings.http, clock: settings.clock };
  const t = service.entry.transport;
  if (t.type !== "http")
    throw new OAuthError(
      "discovery_failed",
      `service "${service.name}" has discovery on but is not a remote MCP server`,
    );
  const d = await discoverOAuth(t.url, { ...http, allowedOrigins: c.allowedOrigins });
  const endpoints = {
    authorizationEndpoint: d.authorizationEndpoint,
    tokenEndpoint: d.tokenEndpoint,
    resource: d.resource,
  };
  if (c.clientId) return { ...endpoints, clientId: c.clientId, ...secret(), dynamic: false };
  if (!d.registrationEndpoint)
    throw new OAuthError(
      "client_unknown",
      `service "${service.name}" offers no dynamic registration and has no clientId`,
    );
  const reg = await registerClient(
    { registrationEndpoint: d.registrationEndpoint, redirectUris: [redirectUri], scopes: c.scopes },
    http,
  );
  return {
    ...endpoints,
    clientId: reg.clientId,
    ...(reg.clientSecret ? { clientSecret: reg.clientSecret } : {}),
    dynamic: true,
  };
}

/**
 * Authorization code + PKCE for a service: endpoints from the registry, or discovered from a
 * remote MCP server's metadata (registering a client dynamically when none is configured).
 */
export function oauthFlows(settings: OAuthFlowSettings): OAuthFlowFactory {
  return async (service: Service, _session: LoginSession): Promise<OAuthFlow> => {
    const c = service.entry.capture;
    if (c.strategy !== "oauth") throw new OAuthError("client_unknown", `service "${service.name}" does not use oauth`);
    const redirectUri = oauthRedirectUri(settings.publicUrl);
    const client = await flowClient(service, c, redirectUri, settings);
    const http = { ...settings.http, clock: settings.clock };
    const state = randomState();
    const { tokenEndpoint, clientId, clientSecret, resource } = client;
    const secret = clientSecret ? { clientSecret } : {};
    const res = resource ? { resource } : {};
    const start = await beginAuthorization({
      authorizationEndpoint: client.authorizationEndpoint,
      clientId,
      redirectUri,
      scopes: c.scopes,
      state,
      extra: c.extraAuthorizeParams,
      ...res,
      production: http.production ?? false,
    });
    return {
      authorizeUrl: start.url,
      redirectPrefix: redirectUri,
      complete: async (url) => {
        const code = readAuthorizationResponse(url, { redirectUri, state });
        const tokens = await exchangeCode(
          { tokenEndpoint, clientId, ...secret, code, redirectUri, verifier: start.verifier, ...res },
          http,
        );
        // A dynamically registered client must travel with its tokens: only it can refresh them.
        return client.dynamic ? { ...tokens, client: { tokenEndpoint, clientId, ...secret, ...res } } : tokens;
      },
    };
  };
}
