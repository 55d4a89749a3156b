import type { AuthorizationServerMetadata, OAuthProtectedResourceMetadata } from "@modelcontextprotocol/client";
import {
  buildDiscoveryUrls,
  checkResourceAllowed,
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
} from "@modelcontextprotocol/client";
import { z } from "zod";
import { OAuthError } from "./errors.js";
import { checkDiscovered, checkEndpoint, guardedFetch, type HttpOptions } from "./http.js";
import { rethrowOwn } from "./sdk.js";

// Discovery for remote MCP vendors (MCP authorization spec) on the SDK's client/auth.js: the MCP
// server's protected-resource metadata (RFC 9728) names its authorization server, whose metadata
// (RFC 8414 / OpenID Connect Discovery) names the endpoints. The SDK fetches and parses; we choose
// the candidates (the 401 hint first), check the resource and issuer, and hold every URL a document
// names to the origin rule of endpoint-policy.ts: https when the document came over https, and on
// the origin of whatever named it (the MCP server, the issuer) unless the registry entry allows another.

/** How discovery sends requests, and the extra origins the service's registry entry trusts. */
export interface DiscoveryOptions extends HttpOptions {
  /** `allowedOrigins` of the registry entry: origins beyond the anchor's own a discovered URL may be on. */
  readonly allowedOrigins?: readonly string[];
}

/** What a resource's protected-resource metadata says, and where it was found. */
export interface ProtectedResource {
  readonly resource: string;
  /** The first has passed the origin rule (the one discovery uses); the rest are as published. */
  readonly authorizationServers: readonly string[];
  readonly scopesSupported?: readonly string[];
  readonly metadataUrl: string;
}

/** The endpoints of an authorization server. */
export interface AuthorizationServer {
  readonly issuer: string;
  readonly authorizationEndpoint: string;
  readonly tokenEndpoint: string;
  readonly registrationEndpoint?: string;
  readonly scopesSupported?: readonly string[];
}

/** Everything discovery learned for one MCP server. `resource` is the RFC 8707 value to send. */
export interface DiscoveredOAuth extends AuthorizationServer {
  readonly resource: string;
  /** Where the protected-resource metadata was found; absent if the server publishes none (legacy fallback). */
  readonly resourceMetadataUrl?: string;
}

/** The `resource_metadata` URL from a `WWW-Authenticate: Bearer ...` header (RFC 9728 §5.1), if any. */
export function resourceMetadataHint(header: string | null): string | undefined {
  if (!header) return undefined;
  return extractWWWAuthenticateParams(new Response(null, { headers: { "www-authenticate": header } }))
    .resourceMetadataUrl?.href;
}

/** RFC 9728 §3.1: the well-known URL is inserted between the host and the resource's path, then the root one. */
export function protectedResourceMetadataUrls(resourceUrl: URL): URL[] {
  const path = resourceUrl.pathname.replace(/\/+$/, "");
  const urls = [];
  if (path) urls.push(new URL(`/.well-known/oauth-protected-resource${path}`, resourceUrl.origin));
  urls.push(new URL("/.well-known/oauth-protected-resource", resourceUrl.origin));
  return urls;
}

/** RFC 8414 §3.1 and OIDC Discovery: where an issuer's metadata may live, in the order the SDK tries them. */
export function authorizationServerMetadataUrls(issuer: URL): URL[] {
  return buildDiscoveryUrls(issuer).map((u) => u.url);
}

function sameIssuer(a: string, b: string): boolean {
  return a.replace(/\/+$/, "") === b.replace(/\/+$/, "");
}

/** Asks the MCP server without credentials; a 401 may point at its metadata. */
async function probeForHint(mcpUrl: URL, opts: DiscoveryOptions): Promise<string | undefined> {
  const res = await guardedFetch(opts, "MCP server probe")
    .fetchFn(mcpUrl, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "ping" }),
    })
    .catch(() => undefined);
  return res?.status === 401 ? resourceMetadataHint(res.headers.get("www-authenticate")) : undefined;
}

/** One candidate URL: the SDK's parsed document, undefined when nothing is published there. */
async function readProtectedResource(
  url: URL,
  requested: URL,
  opts: DiscoveryOptions,
): Promise<OAuthProtectedResourceMetadata | undefined> {
  const http = guardedFetch(opts, "protected-resource metadata");
  try {
    return await discoverOAuthProtectedResourceMetadata(requested, { resourceMetadataUrl: url }, http.fetchFn);
  } catch (err) {
    rethrowOwn(err);
    const status = http.last()?.status ?? 0;
    if (status < 200 || status > 299) return undefined;
    throw new OAuthError("discovery_failed", `protected-resource metadata at ${url.host} is malformed`, { status });
  }
}

/**
 * Finds the MCP server's protected-resource metadata: the `resource_metadata` hint of an
 * unauthenticated request's 401 first (as the MCP spec asks), then the RFC 9728 well-known URLs.
 * Undefined if the server publishes none. The hint and the authorization servers it names are
 * discovered URLs: held to the MCP server's origin unless the registry entry allows another.
 */
export async function fetchProtectedResource(
  mcpUrl: string,
  opts: DiscoveryOptions = {},
): Promise<ProtectedResource | undefined> {
  const requested = checkEndpoint(mcpUrl, "MCP server URL", opts);
  const hint = await probeForHint(requested, opts);
  const candidates = protectedResourceMetadataUrls(requested);
  if (hint) candidates.unshift(checkDiscovered(hint, "resource_metadata URL", requested, opts));
  for (const url of candidates) {
    const doc = await readProtectedResource(url, requested, opts);
    if (!doc) continue;
    const servers = doc.authorization_servers ?? [];
    if (servers.length === 0)
      throw new OAuthError(
        "discovery_failed",
        `protected-resource metadata at ${url.host} names no authorization server`,
      );
    // RFC 9728 §3.3: metadata describing another resource must not be used (same origin, path prefix).
    if (!checkResourceAllowed({ requestedResource: requested, configuredResource: doc.resource })) {
      throw new OAuthError(
        "discovery_failed",
        `protected-resource metadata at ${url.host} describes a different resource`,
      );
    }
    return {
      resource: doc.resource,
      // Only the first is used, so only it is held to the origin rule here.
      authorizationServers: [
        checkDiscovered(servers[0]!, "authorization server", requested, opts).href,
        ...servers.slice(1),
      ],
      ...(doc.scopes_supported ? { scopesSupported: doc.scopes_supported } : {}),
      metadataUrl: url.href,
    };
  }
  return undefined;
}

/**
 * Fetches an issuer's metadata (RFC 8414, falling back to OpenID configuration) through the SDK and
 * checks that it names that issuer. `issuerUrl` has been checked by the caller (configured, or
 * discovered from the MCP server). The endpoints in it are not checked yet: each caller checks the
 * ones it uses with `checkDiscovered` from the issuer. Throws OAuthError.
 */
async function fetchIssuerMetadata(issuerUrl: URL, opts: DiscoveryOptions): Promise<AuthorizationServerMetadata> {
  const http = guardedFetch(opts, "authorization server metadata");
  let m: AuthorizationServerMetadata | undefined;
  try {
    m = await discoverAuthorizationServerMetadata(issuerUrl, { fetchFn: http.fetchFn });
  } catch (err) {
    rethrowOwn(err);
    const last = http.last();
    const host = last ? new URL(last.url).host : issuerUrl.host;
    if (last && last.status >= 500)
      throw new OAuthError("server_error", `authorization server metadata at ${host} failed (HTTP ${last.status})`, {
        status: last.status,
      });
    throw new OAuthError("discovery_failed", `authorization server metadata at ${host} is malformed`);
  }
  if (!m) throw new OAuthError("discovery_failed", `no authorization server metadata found for ${issuerUrl.host}`);
  // RFC 8414 §3.3: a document naming another issuer may be an impersonation attempt.
  if (!sameIssuer(m.issuer, issuerUrl.href))
    throw new OAuthError(
      "discovery_failed",
      `authorization server metadata of ${issuerUrl.host} names a different issuer`,
    );
  return m;
}

/**
 * Fetches an issuer's metadata (RFC 8414, falling back to OpenID configuration) and checks it:
 * every endpoint it names must be https (when the issuer is) and on the issuer's origin or an
 * allowed one. `issuer` is taken as configured; discovery passes the one it already checked.
 */
export async function fetchAuthorizationServer(
  issuer: string | URL,
  opts: DiscoveryOptions = {},
): Promise<AuthorizationServer> {
  const issuerUrl = typeof issuer === "string" ? checkEndpoint(issuer, "authorization server", opts) : issuer;
  const m = await fetchIssuerMetadata(issuerUrl, opts);
  const endpoint = (raw: string, what: string) => checkDiscovered(raw, what, issuerUrl, opts).href;
  if (m.code_challenge_methods_supported && !m.code_challenge_methods_supported.includes("S256")) {
    throw new OAuthError("pkce_unsupported", `authorization server ${issuerUrl.host} does not support PKCE S256`);
  }
  return {
    issuer: m.issuer,
    authorizationEndpoint: endpoint(m.authorization_endpoint, "authorization_endpoint"),
    tokenEndpoint: endpoint(m.token_endpoint, "token_endpoint"),
    ...(m.registration_endpoint
      ? { registrationEndpoint: endpoint(m.registration_endpoint, "registration_endpoint") }
      : {}),
    ...(m.scopes_supported ? { scopesSupported: m.scopes_supported } : {}),
  };
}

/** The RFC 8628 grant type an authorization server lists when it offers device login. */
export const DEVICE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code";

/** The two endpoints of a device login (RFC 8628), checked (configured, or discovered from the issuer). */
export interface DeviceEndpoints {
  readonly deviceAuthorizationEndpoint: string;
  readonly tokenEndpoint: string;
}

/** RFC 8628 §4: the metadata field naming the device authorization endpoint (the SDK's schema keeps unknown fields). */
const deviceMetadata = z.object({ device_authorization_endpoint: z.string().min(1).max(2048) }).loose();

/**
 * Discovers a device login's endpoints from the issuer's metadata (RFC 8414 `device_authorization_endpoint`
 * and `token_endpoint`). Both are discovered URLs: https when the issuer is, on the issuer's origin
 * or an allowed one; nothing is sent to either before both pass. An issuer that lists its grant
 * types without the device grant is refused. Throws OAuthError.
 */
export async function fetchDeviceEndpoints(issuer: string, opts: DiscoveryOptions = {}): Promise<DeviceEndpoints> {
  const issuerUrl = checkEndpoint(issuer, "authorization server", opts);
  const m = await fetchIssuerMetadata(issuerUrl, opts);
  if (m.grant_types_supported && !m.grant_types_supported.includes(DEVICE_GRANT_TYPE)) {
    throw new OAuthError(
      "discovery_failed",
      `authorization server ${issuerUrl.host} does not offer the device authorization grant`,
    );
  }
  const d = deviceMetadata.safeParse(m);
  if (!d.success)
    throw new OAuthError(
      "discovery_failed",
      `authorization server metadata of ${issuerUrl.host} names no device_authorization_endpoint`,
    );
  return {
    deviceAuthorizationEndpoint: checkDiscovered(
      d.data.device_authorization_endpoint,
      "device_authorization_endpoint",
      issuerUrl,
      opts,
    ).href,
    tokenEndpoint: checkDiscovered(m.token_endpoint, "token_endpoint", issuerUrl, opts).href,
  };
}

/**
 * Discovers how to log in to a remote MCP server: its protected-resource metadata, then the
 * first authorization server's metadata. Servers without protected-resource metadata are treated
 * as their own authorization server (the MCP 2025-03-26 fallback). The authorization server must
 * be on the MCP server's origin or an allowed one, and its endpoints on its own. Throws OAuthError.
 */
export async function discoverOAuth(mcpUrl: string, opts: DiscoveryOptions = {}): Promise<DiscoveredOAuth> {
  const requested = checkEndpoint(mcpUrl, "MCP server URL", opts);
  const pr = await fetchProtectedResource(mcpUrl, opts);
  if (!pr) {
    const server = await fetchAuthorizationServer(requested.origin, opts);
    return { ...server, resource: requested.href };
  }
  // Already held to the MCP server's origin (or an allowed one) by fetchProtectedResource.
  const server = await fetchAuthorizationServer(new URL(pr.authorizationServers[0]!), opts);
  return {
    ...server,
    // The resource's own scopes are the ones to ask for; the AS may list scopes of other resources.
    ...(pr.scopesSupported ? { scopesSupported: pr.scopesSupported } : {}),
    // The identifier the resource gave itself (already checked to cover the URL) is what its AS knows.
    resource: pr.resource,
    resourceMetadataUrl: pr.metadataUrl,
  };
}
