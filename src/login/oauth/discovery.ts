import { z } from "zod";
import { OAuthError } from "./errors.js";
import { checkEndpoint, getJson, send, type HttpOptions } from "./http.js";

// Discovery for remote MCP vendors (MCP authorization spec): the MCP server's protected-resource
// metadata (RFC 9728) names its authorization server, whose metadata (RFC 8414 / OpenID
// Connect Discovery) names the endpoints. Every URL that will later carry a code, a token or a
// secret must be https (http only on loopback).

/** RFC 9728 protected-resource metadata; unknown fields are tolerated. */
const protectedResourceSchema = z
  .object({
    resource: z.string().min(1),
    authorization_servers: z.array(z.string().min(1)).min(1),
    scopes_supported: z.array(z.string()).optional(),
  })
  .loose();

/** RFC 8414 authorization-server metadata (and the OIDC subset we read); unknown fields are tolerated. */
const authorizationServerSchema = z
  .object({
    issuer: z.string().min(1),
    authorization_endpoint: z.string().min(1),
    token_endpoint: z.string().min(1),
    registration_endpoint: z.string().min(1).optional(),
    scopes_supported: z.array(z.string()).optional(),
    code_challenge_methods_supported: z.array(z.string()).optional(),
  })
  .loose();

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
  const m = /(?:^|[\s,])resource_metadata\s*=\s*(?:"([^"]*)"|([^\s,]+))/i.exec(header);
  const value = m?.[1] ?? m?.[2];
  return value ? value : undefined;
}

/** RFC 9728 §3.1: the well-known URL is inserted between the host and the resource's path. */
export function protectedResourceMetadataUrls(resourceUrl: URL): URL[] {
  const path = resourceUrl.pathname.replace(/\/+$/, "");
  const urls = [];
  if (path) urls.push(new URL(`/.well-known/oauth-protected-resource${path}`, resourceUrl.origin));
  urls.push(new URL("/.well-known/oauth-protected-resource", resourceUrl.origin));
  return urls;
}

/** RFC 8414 §3.1 and OIDC Discovery: where an issuer's metadata may live, in the order to try. */
export function authorizationServerMetadataUrls(issuer: URL): URL[] {
  const path = issuer.pathname.replace(/\/+$/, "");
  if (!path) {
    return [new URL("/.well-known/oauth-authorization-server", issuer.origin), new URL("/.well-known/openid-configuration", issuer.origin)];
  }
  return [
    new URL(`/.well-known/oauth-authorization-server${path}`, issuer.origin),
    new URL(`/.well-known/openid-configuration${path}`, issuer.origin),
    new URL(`${path}/.well-known/openid-configuration`, issuer.origin),
  ];
}

function sameIssuer(a: string, b: string): boolean {
  return a.replace(/\/+$/, "") === b.replace(/\/+$/, "");
}

/**
 * RFC 9728 §3.3: metadata describing another resource must not be used. Vendors commonly name
 * their origin (or a parent path) as the resource, so a same-origin path prefix is accepted.
 */
function coversResource(advertised: string, requested: URL): boolean {
  let adv: URL;
  try {
    adv = new URL(advertised);
  } catch {
    return false;
  }
  if (adv.origin !== requested.origin) return false;
  const advPath = adv.pathname.replace(/\/+$/, "");
  const reqPath = requested.pathname.replace(/\/+$/, "");
  return reqPath === advPath || reqPath.startsWith(`${advPath}/`);
}

/** Asks the MCP server without credentials; a 401 may point at its metadata. */
async function probeForHint(mcpUrl: URL, opts: HttpOptions): Promise<string | undefined> {
  const res = await send(
    mcpUrl,
    {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "ping" }),
    },
    opts,
    "MCP server probe",
  ).catch(() => undefined);
  if (!res) return undefined;
  await res.body?.cancel().catch(() => undefined);
  return res.status === 401 ? resourceMetadataHint(res.headers.get("www-authenticate")) : undefined;
}

async function readProtectedResource(url: URL, requested: URL, opts: HttpOptions): Promise<ProtectedResource | undefined> {
  const got = await getJson(url, opts, "protected-resource metadata");
  if (!got || got.status !== 200) return undefined;
  const parsed = protectedResourceSchema.safeParse(got.body);
  if (!parsed.success) throw new OAuthError("discovery_failed", `protected-resource metadata at ${url.host} is malformed`);
  if (!coversResource(parsed.data.resource, requested)) {
    throw new OAuthError("discovery_failed", `protected-resource metadata at ${url.host} describes a different resource`);
  }
  return {
    resource: parsed.data.resource,
    authorizationServers: parsed.data.authorization_servers,
    ...(parsed.data.scopes_supported ? { scopesSupported: parsed.data.scopes_supported } : {}),
    metadataUrl: url.href,
  };
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
  if (hint) candidates.unshift(checkEndpoint(new URL(hint, requested).href, "resource_metadata URL"));
  for (const url of candidates) {
    const found = await readProtectedResource(url, requested, opts);
    if (found) return found;
  }
  return undefined;
}

/** Fetches an issuer's metadata (RFC 8414, falling back to OpenID configuration) and checks it. */
export async function fetchAuthorizationServer(issuer: string, opts: HttpOptions = {}): Promise<AuthorizationServer> {
  const issuerUrl = checkEndpoint(issuer, "authorization server");
  for (const url of authorizationServerMetadataUrls(issuerUrl)) {
    const got = await getJson(url, opts, "authorization server metadata");
    if (!got || got.status !== 200) continue;
    const parsed = authorizationServerSchema.safeParse(got.body);
    if (!parsed.success) throw new OAuthError("discovery_failed", `authorization server metadata at ${url.host} is malformed`);
    const m = parsed.data;
    // RFC 8414 §3.3: a document naming another issuer may be an impersonation attempt.
    if (!sameIssuer(m.issuer, issuerUrl.href)) throw new OAuthError("discovery_failed", `authorization server metadata at ${url.host} names a different issuer`);
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
  throw new OAuthError("discovery_failed", `no authorization server metadata found for ${issuerUrl.host}`);
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
