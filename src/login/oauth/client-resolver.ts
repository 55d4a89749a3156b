import type { Service } from "../../config/registry.js";
import { type DiscoveredOAuth, discoverOAuth } from "./discovery.js";
import { registryOrigins } from "./endpoint-policy.js";
import { OAuthError } from "./errors.js";
import type { HttpOptions } from "./http.js";

/** The OAuth client a refresh is made as: where to send it and who the broker is there. */
export interface OAuthClientConfig {
  readonly tokenEndpoint: string;
  readonly clientId: string;
  /** Confidential clients only; never logged, never stored in the registry itself. */
  readonly clientSecret?: string;
  /** RFC 8707 resource indicator to send (remote MCP servers found by discovery). */
  readonly resource?: string;
}

/**
 * Looks up a client secret by the environment variable name the registry gives
 * (`capture.clientSecretEnv`). Only config/ reads the environment, so the composition root
 * passes this in; undefined means "not set".
 */
export type ClientSecretSource = (envName: string) => string | undefined;

/**
 * Works out the OAuth client for a service's refreshes. An explicit client (the one the login
 * flow discovered and registered, stored alongside the connection's service) wins; otherwise the
 * registry's capture config supplies it, discovering the token endpoint for `discovery: true`
 * services that have a pre-registered `clientId`. Discovery results are cached per service.
 */
export class OAuthClientResolver {
  private readonly discovered = new Map<string, Promise<DiscoveredOAuth>>();

  constructor(
    private readonly deps: { secretOf?: ClientSecretSource; http?: HttpOptions; discover?: typeof discoverOAuth } = {},
  ) {}

  /**
   * The client for `service`; throws OAuthError `client_unknown` (or a discovery error) if there is
   * none, and `insecure_endpoint` for an explicit (stored) client whose token endpoint is on no origin
   * the service's registry entry vouches for: a refresh token is never sent anywhere else.
   */
  async resolve(service: Service, explicit?: OAuthClientConfig): Promise<OAuthClientConfig> {
    if (explicit) {
      const origin = URL.canParse(explicit.tokenEndpoint) ? new URL(explicit.tokenEndpoint).origin : "";
      if (!registryOrigins(service.entry).has(origin)) {
        throw new OAuthError(
          "insecure_endpoint",
          `the token endpoint stored for service "${service.name}" (${origin || "not a URL"}) is on no origin its registry entry names or allows`,
        );
      }
      return explicit;
    }
    const capture = service.entry.capture;
    if (capture.strategy !== "oauth")
      throw new OAuthError("client_unknown", `service "${service.name}" does not capture OAuth credentials`);
    if (!capture.clientId) {
      throw new OAuthError(
        "client_unknown",
        `service "${service.name}" registers its OAuth client dynamically; the client stored at login must be passed in`,
      );
    }
    let clientSecret: string | undefined;
    if (capture.clientSecretEnv) {
      clientSecret = this.deps.secretOf?.(capture.clientSecretEnv);
      // Name the variable, never its value.
      if (!clientSecret)
        throw new OAuthError(
          "client_unknown",
          `the client secret variable ${capture.clientSecretEnv} of service "${service.name}" is not set`,
        );
    }
    let tokenEndpoint = capture.tokenUrl;
    let resource: string | undefined;
    if (capture.discovery) {
      const transport = service.entry.transport;
      if (transport.type !== "http")
        throw new OAuthError("client_unknown", `service "${service.name}" uses discovery but has no remote MCP URL`);
      resource = transport.url;
      if (!tokenEndpoint) {
        const found = await this.discover(service.name, transport.url, capture.allowedOrigins);
        tokenEndpoint = found.tokenEndpoint;
        resource = found.resource;
      }
    }
    if (!tokenEndpoint) throw new OAuthError("client_unknown", `service "${service.name}" has no token endpoint`);
    return {
      tokenEndpoint,
      clientId: capture.clientId,
      ...(clientSecret ? { clientSecret } : {}),
      ...(resource ? { resource } : {}),
    };
  }

  private discover(name: string, url: string, allowedOrigins: readonly string[]): Promise<DiscoveredOAuth> {
    let p = this.discovered.get(name);
    if (!p) {
      p = (this.deps.discover ?? discoverOAuth)(url, { ...this.deps.http, allowedOrigins });
      // A failed discovery is not cached: the next refresh tries again.
      p.catch(() => this.discovered.delete(name));
      this.discovered.set(name, p);
    }
    return p;
  }
}
