// The login hosts a service registry names ahead of time: what a spare browser, started before
// its login is known, lets resolve (see spare-browsers.ts). The same choice the login service
// makes for a flow: the service's loginDomains, else the host of its start or authorize URL.
import type { ServiceRegistry } from "../../config/registry.js";
import { HostAllowlist } from "./host-allowlist.js";

/** Resolvable host names (HostAllowlist.resolvableHosts) of every browser login `registry` can start; a malformed pattern is skipped (its login fails closed on its own). */
export function registryLoginHosts(registry: ServiceRegistry): Set<string> {
  const hosts = new Set<string>();
  for (const service of registry.list()) {
    const { loginDomains, capture } = service.entry;
    // A device-code login starts no browser: the person signs in on their own device.
    if (capture.strategy === "device") continue;
    const url = capture.strategy === "oauth" ? capture.authorizationUrl : capture.startUrl;
    const patterns = loginDomains.length ? loginDomains : url ? [new URL(url).host] : [];
    if (patterns.length === 0) continue;
    try {
      for (const h of HostAllowlist.parse(patterns).resolvableHosts()) hosts.add(h);
    } catch {}
  }
  return hosts;
}

/**
 * The allowed host patterns of the one browser login `registry` can start, when there is exactly
 * one such list (the same list a flow would use: loginDomains, else the start or authorize URL's
 * host); undefined when there are none or several. A spare pre-makes its page for it.
 */
export function soleLoginAllowlist(registry: ServiceRegistry): readonly string[] | undefined {
  const lists = new Map<string, readonly string[]>();
  for (const service of registry.list()) {
    const { loginDomains, capture } = service.entry;
    if (capture.strategy === "device") continue;
    const url = capture.strategy === "oauth" ? capture.authorizationUrl : capture.startUrl;
    const patterns = loginDomains.length ? loginDomains : url ? [new URL(url).host] : [];
    if (patterns.length) lists.set(JSON.stringify(patterns), patterns);
  }
  return lists.size === 1 ? [...lists.values()][0] : undefined;
}
