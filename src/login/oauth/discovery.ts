import {
  buildDiscoveryUrls,
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  extractWWWAuthenticateParams,
} from "@modelcontextprotocol/sdk/client/auth.js";
import type { AuthorizationServerMetadata, OAuthProtectedResourceMetadata } from "@modelcontextprotocol/sdk/shared/auth.js";
import { checkResourceAllowed } from "@modelcontextprotocol/sdk/shared/auth-utils.js";
import { z } from "zod";
import { OAuthError } from "./errors.js";
import { checkEndpoint, guardedFetch, type HttpOptions } from "./http.js";
import { rethrowOwn } from "./sdk.js";

// Discovery for remote MCP vendors (MCP authorization spec) on the SDK's client/auth.js: the MCP
// server's protected-resource metadata (RFC 9728) names its authorization server, whose metadata
// (RFC 8414 / OpenID Connect Discovery) names the endpoints. The SDK fetches and parses; we choose
// the candidates (the 401 hint first), check the resource and issuer, and require https endpoints.

/** What a resource's protected-resource metadata says, and where it was found. */
export interface ProtectedResource {
  readonly resource: string;
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
  return extractWWWAuthenticateParams(new Response(null, { headers: { "www-authenticate": header } })).resourceMetadataUrl?.href;
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
async function probeForHint(mcpUrl: URL, opts: HttpOptions): Promise<string | undefined> {
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
async function readProtectedResource(url: URL, requested: URL, opts: HttpOptions): Promise<OAuthProtectedResourceMetadata | undefined> {
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
 * Undefined if the server publishes none.
 */
export async function fetchProtectedResource(mcpUrl: string, opts: HttpOptions = {}): Promise<ProtectedResource | undefined> {
  const requested = checkEndpoint(mcpUrl, "MCP server URL");
  const hint = await probeForHint(requested, opts);
  const candidates = protectedResourceMetadataUrls(requested);
  if (hint) candidates.unshift(checkEndpoint(hint, "resource_metadata URL"));
  for (const url of candidates) {
    const doc = await readProtectedResource(url, requested, opts);
    if (!doc) continue;
    const servers = doc.authorization_servers ?? [];
    if (servers.length === 0) throw new OAuthError("discovery_failed", `protected-resource metadata at ${url.host} names no authorization server`);
    // RFC 9728 §3.3: metadata describing another resource must not be used (same origin, path prefix).
    if (!checkResourceAllowed({ requestedResource: requested, configuredResource: doc.resource })) {
      throw new OAuthError("discovery_failed", `protected-resource metadata at ${url.host} describes a different resource`);
    }
    return {
      resource: doc.resource,
      authorizationServers: servers,
      ...(doc.scopes_supported ? { scopesSupported: doc.scopes_supported } : {}),
      metadataUrl: url.href,
    };
  }
  return undefined;
}

/**
 * Fetches an issuer's metadata (RFC 8414, falling back to OpenID configuration) through the SDK and
 * checks that it names that issuer. The endpoints in it are not checked yet: each caller checks the
 * ones it uses. Throws OAuthError.
 */
async function fetchIssuerMetadata(issuer: string, opts: HttpOptions): Promise<{ issuerUrl: URL; m: AuthorizationServerMetadata }> {
  const issuerUrl = checkEndpoint(issuer, "authorization server");
  const http = guardedFetch(opts, "authorization server metadata");
  let m: AuthorizationServerMetadata | undefined;
  try {
    m = await discoverAuthorizationServerMetadata(issuerUrl, { fetchFn: http.fetchFn });
  } catch (err) {
    rethrowOwn(err);
    const last = http.last();
    const host = last ? new URL(last.url).host : issuerUrl.host;
    if (last && last.status >= 500) throw new OAuthError("server_error", `authorization server metadata at ${host} failed (HTTP ${last.status})`, { status: last.status });
    throw new OAuthError("discovery_failed", `authorization server metadata at ${host} is malformed`);
  }
  if (!m) throw new OAuthError("discovery_failed", `no authorization server metadata found for ${issuerUrl.host}`);
  // RFC 8414 §3.3: a document naming another issuer may be an impersonation attempt.
  if (!sameIssuer(m.issuer, issuerUrl.href)) throw new OAuthError("discovery_failed", `authorization server metadata of ${issuerUrl.host} names a different issuer`);
  return { issuerUrl, m };
}

/** Fetches an issuer's metadata (RFC 8414, falling back to OpenID configuration) and checks it. */
export async function fetchAuthorizationServer(issuer: string, opts: HttpOptions = {}): Promise<AuthorizationServer> {
  const { issuerUrl, m } = await fetchIssuerMetadata(issuer, opts);
  if (m.code_challenge_methods_supported && !m.code_challenge_methods_supported.includes("S256")) {
    throw new OAuthError("pkce_unsupported", `authorization server ${issuerUrl.host} does not support PKCE S256`);
  }
  return {
    issuer: m.issuer,
    authorizationEndpoint: checkEndpoint(m.authorization_endpoint, "authorization_endpoint").href,
    tokenEndpoint: checkEndpoint(m.token_endpoint, "token_endpoint").href,
    ...(m.registration_endpoint ? { registrationEndpoint: checkEndpoint(m.registration_endpoint, "registration_endpoint").href } : {}),
    ...(m.scopes_supported ? { scopesSupported: m.scopes_supported } : {}),
  };
}

/** The RFC 8628 grant type an authorization server lists when it offers device login. */
export const DEVICE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code";

/** The two endpoints of a device login (RFC 8628), checked like configured ones. */
export interface DeviceEndpoints {
  readonly deviceAuthorizationEndpoint: string;
  readonly tokenEndpoint: string;
}

/** RFC 8628 §4: the metadata field naming the device authorization endpoint (the SDK's schema keeps unknown fields). */
const deviceMetadata = z.object({ device_authorization_endpoint: z.string().min(1).max(2048) }).loose();

/**
 * Discovers a device login's endpoints from the issuer's metadata (RFC 8414 `device_authorization_endpoint`
 * and `token_endpoint`). Both must pass `checkEndpoint` (https, or http to loopback), as configured
 * ones do; an issuer that lists its grant types without the device grant is refused. Throws OAuthError.
 */
export async function fetchDeviceEndpoints(issuer: string, opts: HttpOptions = {}): Promise<DeviceEndpoints> {
  const { issuerUrl, m } = await fetchIssuerMetadata(issuer, opts);
  if (m.grant_types_supported && !m.grant_types_supported.includes(DEVICE_GRANT_TYPE)) {
    throw new OAuthError("discovery_failed", `authorization server ${issuerUrl.host} does not offer the device authorization grant`);
  }
  const d = deviceMetadata.safeParse(m);
  if (!d.success) throw new OAuthError("discovery_failed", `authorization server metadata of ${issuerUrl.host} names no device_authorization_endpoint`);
  return {
    deviceAuthorizationEndpoint: checkEndpoint(d.data.device_authorization_endpoint, "device_authorization_endpoint").href,
    tokenEndpoint: checkEndpoint(m.token_endpoint, "token_endpoint").href,
  };
}

/**
 * Discovers how to log in to a remote MCP server: its protected-resource metadata, then the
 * first authorization server's metadata. Servers without protected-resource metadata are treated
 * as their own authorization server (the MCP 2025-03-26 fallback). Throws OAuthError.
 */
export async function discoverOAuth(mcpUrl: string, opts: HttpOptions = {}): Promise<DiscoveredOAuth> {
  const requested = checkEndpoint(mcpUrl, "MCP server URL");
  const pr = await fetchProtectedResource(mcpUrl, opts);
  if (!pr) {
    const server = await fetchAuthorizationServer(requested.origin, opts);
    return { ...server, resource: requested.href };
  }
  const server = await fetchAuthorizationServer(pr.authorizationServers[0]!, opts);
  return {
    ...server,
    // The resource's own scopes are the ones to ask for; the AS may list scopes of other resources.
    ...(pr.scopesSupported ? { scopesSupported: pr.scopesSupported } : {}),
    // The identifier the resource gave itself (already checked to cover the URL) is what its AS knows.
    resource: pr.resource,
    resourceMetadataUrl: pr.metadataUrl,
  };
}
