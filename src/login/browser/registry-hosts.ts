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
