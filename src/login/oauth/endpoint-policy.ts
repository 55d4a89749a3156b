import type { ServiceEntry } from "../../config/registry-schema.js";

// The one rule for every URL the OAuth client sends to, fetches or shows: configured by the
// operator, or read from metadata (RFC 9728 protected-resource, RFC 8414 authorization server,
// RFC 8628 device authorization responses). A pure function of the URL, where it came from and
// the deployment mode, so it can be reviewed on one screen and table-tested.

/** Hosts that name this machine; plain http is tolerated only to them, only outside production. */
const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** Whether a parsed URL's host is a loopback name. */
export function isLoopbackHost(url: URL): boolean {
  return LOOPBACK.has(url.hostname);
}

/**
 * Where a URL came from. `configured`: the operator wrote it in the registry (or it is the broker's
 * own setting). `discovered`: a document fetched from `from` (the issuer, the MCP server, the device
 * endpoint that answered) named it; `allowedOrigins` are the extra origins the registry entry trusts.
 */
export type EndpointSource =
  | { readonly kind: "configured" }
  | { readonly kind: "discovered"; readonly from: URL; readonly allowedOrigins: readonly string[] };

/** Why a URL is refused (each maps to one sentence in `refusalText`). */
export type EndpointRefusal =
  | "not_a_url"
  | "credentials"
  | "scheme"
  | "http_in_production"
  | "http_not_loopback"
  | "downgrade"
  | "foreign_origin";

/** The verdict on one URL: the parsed URL to use, or why not. */
export type EndpointVerdict =
  | { readonly ok: true; readonly url: URL }
  | { readonly ok: false; readonly reason: EndpointRefusal };

/**
 * Judges one URL. Always: a valid URL, no embedded credentials, https, or plain http to a
 * loopback host outside production. A discovered URL also: https when the document it came from
 * was fetched over https (no downgrade), and on that document's own origin or one the registry
 * entry lists (a sibling subdomain is another origin: refused unless listed).
 */
export function judgeEndpoint(
  raw: string,
  source: EndpointSource,
  rules: { readonly production: boolean },
): EndpointVerdict {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "not_a_url" };
  }
  if (url.username || url.password) return { ok: false, reason: "credentials" };
  if (url.protocol !== "https:" && url.protocol !== "http:") return { ok: false, reason: "scheme" };
  if (url.protocol === "http:") {
    if (rules.production) return { ok: false, reason: "http_in_production" };
    if (!isLoopbackHost(url)) return { ok: false, reason: "http_not_loopback" };
  }
  if (source.kind === "discovered") {
    if (source.from.protocol === "https:" && url.protocol !== "https:") return { ok: false, reason: "downgrade" };
    if (url.origin !== source.from.origin && !source.allowedOrigins.some((o) => originOf(o) === url.origin))
      return { ok: false, reason: "foreign_origin" };
  }
  return { ok: true, url };
}

/** The origin of an allowed-origin entry (the registry schema already requires a bare origin). */
function originOf(entry: string): string | undefined {
  try {
    return new URL(entry).origin;
  } catch {
    return undefined;
  }
}

/** The sentence for a refusal of `what` (e.g. "token_endpoint"); names the origin, never a path or query. */
export function refusalText(what: string, reason: EndpointRefusal, raw: string, source: EndpointSource): string {
  const origin = URL.canParse(raw) ? new URL(raw).origin : "";
  const from = source.kind === "discovered" ? source.from.origin : "";
  switch (reason) {
    case "not_a_url":
      return `${what} is not a valid URL`;
    case "credentials":
      return `${what} must not embed credentials`;
    case "scheme":
      return `${what} must use https`;
    case "http_in_production":
      return `${what} must use https (plain http is refused with NODE_ENV=production, loopback included)`;
    case "http_not_loopback":
      return `${what} must use https (plain http only to a loopback host, outside production)`;
    case "downgrade":
      return `${what} ${origin} was named by https metadata of ${from} and must use https too`;
    case "foreign_origin":
      return `${what} ${origin} is not on the origin of ${from}; list it in the service's allowedOrigins if it is really that service's`;
  }
}

/**
 * Every origin a service's registry entry vouches for: its configured OAuth URLs and issuer, its
 * remote MCP server (the anchor of discovery) and its allowedOrigins. A token endpoint stored with
 * a credential must be on one of them before a refresh token is sent there.
 */
export function registryOrigins(entry: ServiceEntry): ReadonlySet<string> {
  const out = new Set<string>();
  const add = (u: string | undefined) => {
    const o = u === undefined ? undefined : originOf(u);
    if (o !== undefined && o !== "null") out.add(o);
  };
  const c = entry.capture;
  if (c.strategy === "oauth") {
    add(c.authorizationUrl);
    add(c.tokenUrl);
    if (c.discovery && entry.transport.type === "http") add(entry.transport.url);
    for (const o of c.allowedOrigins) add(o);
  }
  if (c.strategy === "device") {
    add(c.device.issuer);
    add(c.device.deviceAuthorizationEndpoint);
    add(c.device.tokenEndpoint);
    for (const o of c.device.allowedOrigins) add(o);
  }
  return out;
}
