import type { Clock } from "../clock/clock.js";
import type { Service } from "../config/registry.js";
import type { LoginSession } from "../store/records.js";
import type { OAuthFlow, OAuthFlowFactory } from "./login-service.js";
import { discoverOAuth } from "./oauth/discovery.js";
import { OAuthError } from "./oauth/errors.js";
import type { HttpOptions } from "./oauth/http.js";
import { createPkce, randomState } from "./oauth/pkce.js";
import { registerClient } from "./oauth/registration.js";
import { buildAuthorizeUrl, exchangeCode, readAuthorizationResponse } from "./oauth/token-client.js";

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

/**
 * Authorization code + PKCE for a service: endpoints from the registry, or discovered from a
 * remote MCP server's metadata (registering a client dynamically when none is configured).
 */
export function oauthFlows(settings: OAuthFlowSettings): OAuthFlowFactory {
  return async (service: Service, _session: LoginSession): Promise<OAuthFlow> => {
    const c = service.entry.capture;
    if (c.strategy !== "oauth") throw new OAuthError("client_unknown", `service "${service.name}" does not use oauth`);
    const redirectUri = oauthRedirectUri(settings.publicUrl);
    const http = settings.http ?? {};
    let authorizationEndpoint: string;
    let tokenEndpoint: string;
    let clientId: string;
    let clientSecret: string | undefined;
    let resource: string | undefined;
    let dynamic = false;
    if (c.discovery) {
      const t = service.entry.transport;
      if (t.type !== "http") throw new OAuthError("discovery_failed", `service "${service.name}" has discovery on but is not a remote MCP server`);
      const d = await discoverOAuth(t.url, http);
      authorizationEndpoint = d.authorizationEndpoint;
      tokenEndpoint = d.tokenEndpoint;
      resource = d.resource;
      if (c.clientId) clientId = c.clientId;
      else if (d.registrationEndpoint) {
        const reg = await registerClient({ registrationEndpoint: d.registrationEndpoint, redirectUris: [redirectUri], scopes: c.scopes }, http);
        clientId = reg.clientId;
        clientSecret = reg.clientSecret;
        dynamic = true;
      } else throw new OAuthError("client_unknown", `service "${service.name}" offers no dynamic registration and has no clientId`);
    } else {
      authorizationEndpoint = c.authorizationUrl!;
      tokenEndpoint = c.tokenUrl!;
      clientId = c.clientId!;
    }
    if (c.clientSecretEnv && !dynamic) {
      clientSecret = settings.secretOf(c.clientSecretEnv);
      if (!clientSecret) throw new OAuthError("client_unknown", `${c.clientSecretEnv} is not set (the client secret of service "${service.name}")`);
    }
    const pkce = createPkce();
    const state = randomState();
    const authorizeUrl = buildAuthorizeUrl({ authorizationEndpoint, clientId, redirectUri, scopes: c.scopes, state, challenge: pkce.challenge, extra: c.extraAuthorizeParams, ...(resource ? { resource } : {}) });
    return {
      authorizeUrl,
      redirectPrefix: redirectUri,
      complete: async (url) => {
        const code = readAuthorizationResponse(url, { redirectUri, state });
        const tokens = await exchangeCode(
          { tokenEndpoint, clientId, ...(clientSecret ? { clientSecret } : {}), code, redirectUri, verifier: pkce.verifier, ...(resource ? { resource } : {}) },
          { ...http, clock: settings.clock },
        );
        // A dynamically registered client must travel with its tokens: only it can refresh them.
        return dynamic ? { ...tokens, client: { tokenEndpoint, clientId, ...(clientSecret ? { clientSecret } : {}), ...(resource ? { resource } : {}) } } : tokens;
      },
    };
  };
}
