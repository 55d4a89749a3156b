// Which hosts the confined login browser may talk to, and which of its cookies belong to them.
//
// A pattern is a host name ("idp.example.com"), a wildcard over subdomains ("*.example.com": any
// depth of subdomain, NOT example.com itself: list both if both are needed), or either with a
// port ("127.0.0.1:4567"). With a port the pattern matches exactly that host and port; without
// one it matches only the scheme's default port (80 for http/ws, 443 for https/wss), so a bare
// "127.0.0.1" does not open every local service. Only http, https, ws and wss URLs can match.
import { ConfinedBrowserError } from "./errors.js";

/** One parsed host pattern. */
interface HostPattern {
  /** Lower-case host name, IPv4 literal or bracketed IPv6 literal, without the "*." prefix. */
  readonly host: string;
  readonly wildcard: boolean;
  /** The exact port, or undefined for "the scheme's default port". */
  readonly port: number | undefined;
}

const LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const PATTERN = new RegExp(`^(\\*\\.)?((?:${LABEL}\\.)*${LABEL}|\\[[0-9a-f:.]+\\])(?::(\\d{1,5}))?$`);
const WEB_SCHEMES = new Set(["http:", "https:", "ws:", "wss:"]);
const DEFAULT_PORT: Record<string, number> = { "http:": 80, "ws:": 80, "https:": 443, "wss:": 443 };

/** A fixed set of host patterns; build it with `HostAllowlist.parse`. */
export class HostAllowlist {
  private constructor(private readonly patterns: readonly HostPattern[]) {}

  /** Parses patterns; throws `invalid_options` naming the first malformed one (fail closed). */
  static parse(patterns: readonly string[]): HostAllowlist {
    if (patterns.length === 0) throw new ConfinedBrowserError("invalid_options", "allowedHosts is empty");
    return new HostAllowlist(patterns.map(parsePattern));
  }

  /** Whether the browser may request `url` (an absolute URL string). */
  allowsUrl(url: string): boolean {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return false;
    }
    if (!WEB_SCHEMES.has(u.protocol) || u.username !== "" || u.password !== "") return false;
    const host = u.hostname.toLowerCase();
    // URL drops a port equal to the scheme's default, so "" means "default port".
    const effectivePort = u.port === "" ? DEFAULT_PORT[u.protocol] : Number(u.port);
    return this.patterns.some(
      (p) => hostMatches(p, host) && (p.port === undefined ? u.port === "" : p.port === effectivePort),
    );
  }

  /**
   * Chromium `--host-resolver-rules` under which every host name outside the allowlist fails to
   * resolve: a network-level backstop behind the request routes (ports are the routes' job).
   */
  hostResolverRules(): string {
    return resolverRules(this.resolvableHosts());
  }

  /** The host names (wildcards kept, ports dropped) the resolver rules leave resolvable. */
  resolvableHosts(): string[] {
    const excludes = new Set<string>();
    for (const p of this.patterns) {
      excludes.add(`${p.wildcard ? "*." : ""}${p.host}`);
      if (p.host.startsWith("[")) excludes.add(p.host.slice(1, -1));
    }
    return [...excludes];
  }

  /**
   * A Chromium `--proxy-bypass-list` naming exactly the allowed host:port pairs. With
   * `--proxy-server` pointing at a proxy that cannot be reached, everything else fails in the
   * network stack itself: redirect hops, WebSockets and workers included, which the request route
   * does not see. "<-loopback>" must come first: it drops the implicit bypass of localhost.
   */
  proxyBypassList(): string {
    return this.proxyBypassRules().join(";");
  }

  /** The rules of proxyBypassList, one per entry ("<-loopback>" first): a browser context's proxy bypass takes them comma-separated. */
  proxyBypassRules(): string[] {
    const rules = ["<-loopback>"];
    for (const p of this.patterns) {
      const host = `${p.wildcard ? "*." : ""}${p.host}`;
      if (p.port !== undefined) rules.push(`${host}:${p.port}`);
      else rules.push(`${host}:80`, `${host}:443`);
    }
    return rules;
  }

  /**
   * Whether a cookie with this `domain` (as the browser reports it: a leading dot for a domain
   * cookie, none for a host-only one) would be sent to some allowed host.
   */
  allowsCookieDomain(domain: string): boolean {
    const isDomainCookie = domain.startsWith(".");
    const d = (isDomainCookie ? domain.slice(1) : domain).toLowerCase();
    if (d === "") return false;
    return this.patterns.some((p) => {
      if (p.wildcard) {
        // Any subdomain of the pattern's base, or (for a domain cookie) the base or one of its parents.
        return d.endsWith(`.${p.host}`) || (isDomainCookie && (d === p.host || p.host.endsWith(`.${d}`)));
      }
      return d === p.host || (isDomainCookie && p.host.endsWith(`.${d}`));
    });
  }
}

/**
 * Chromium `--host-resolver-rules` under which only `hosts` (as resolvableHosts gives them) resolve;
 * with none, no host name resolves at all.
 */
export function resolverRules(hosts: Iterable<string>): string {
  return ["MAP * ~NOTFOUND", ...[...hosts].map((h) => `EXCLUDE ${h}`)].join(", ");
}

function parsePattern(raw: string): HostPattern {
  const m = PATTERN.exec(raw.trim().toLowerCase());
  const host = m?.[2];
  if (!m || host === undefined)
    throw new ConfinedBrowserError(
      "invalid_options",
      `allowedHosts: "${raw}" is not a host pattern such as "idp.example.com", "*.example.com" or "127.0.0.1:4567"`,
    );
  const wildcard = m[1] !== undefined;
  // "*.com" would open a whole top-level domain: require a base of at least two labels.
  if (wildcard && (host.startsWith("[") || !host.includes("."))) {
    throw new ConfinedBrowserError(
      "invalid_options",
      `allowedHosts: "${raw}" is too broad; a wildcard needs a base such as "*.example.com"`,
    );
  }
  let port: number | undefined;
  if (m[3] !== undefined) {
    port = Number(m[3]);
    if (port < 1 || port > 65_535)
      throw new ConfinedBrowserError("invalid_options", `allowedHosts: "${raw}" has an invalid port`);
  }
  return { host, wildcard, port };
}

function hostMatches(p: HostPattern, host: string): boolean {
  return p.wildcard ? host.endsWith(`.${p.host}`) : host === p.host;
}
