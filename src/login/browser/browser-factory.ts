import { type Clock, systemClock } from "../../clock/clock.js";
import type { ServiceRegistry } from "../../config/registry.js";
import type { Logger } from "../../log/logger.js";
import type { LoginBrowserFactory } from "../ports.js";
import { registryLoginHosts, soleLoginAllowlist } from "./registry-hosts.js";
import { SpareBrowsers } from "./spare-browsers.js";

/** Where and how the production login browsers run; every value comes from config/, none from the environment. */
export interface ChromiumSettings {
  /** The Chromium executable (SLAUDE_CHROMIUM_PATH). */
  readonly chromiumPath: string;
  readonly log: Logger;
  /** A BrowserHomes directory: each browser's HOME is made there so a restart can sweep it. */
  readonly homesDir?: string;
  /** Chromium's PATH (Config.childBaseEnv.PATH); default "/usr/bin:/bin". */
  readonly searchPath?: string | undefined;
  /** Times the close grace period (default the system clock). */
  readonly clock?: Clock;
  /** Pre-started browsers a login takes before starting its own (see spare-browsers.ts). */
  readonly spares?: SpareBrowsers;
}

/** The production login browser: Debian's Chromium driven by playwright-core (loaded on first use). */
export function chromiumBrowsers(s: ChromiumSettings): LoginBrowserFactory {
  return async (req) => {
    const { ConfinedBrowser } = await import("./confined-browser.js");
    return ConfinedBrowser.launch({
      chromiumPath: s.chromiumPath,
      allowedHosts: req.allowedHosts,
      startUrl: req.startUrl,
      viewport: req.viewport,
      onFrame: (f) => req.onFrame({ data: f.data, width: f.width, height: f.height, popup: f.popup }),
      onBlockedNavigation: req.onBlockedNavigation,
      ...(req.intercept ? { intercept: req.intercept } : {}),
      ...(s.homesDir ? { homeParent: s.homesDir } : {}),
      ...(s.searchPath ? { searchPath: s.searchPath } : {}),
      ...(s.clock ? { clock: s.clock } : {}),
      ...(s.spares ? { spares: s.spares } : {}),
      log: { warn: (msg, f) => s.log.warn(msg, f as Record<string, string>) },
    });
  };
}

/** The production login browsers of a broker: the factory, and the stop of its spares for shutdown. */
export interface ChromiumLogins {
  readonly browsers: LoginBrowserFactory;
  /** Spares held now, started or starting (0 when the pool is off). */
  spareCount(): number;
  /** Resolves once the spares held now have started; how many did (0 when the pool is off). */
  sparesReady(): Promise<number>;
  /** Kills the spares not handed out (those still starting included); browsers of running logins are theirs to close. */
  close(): Promise<void>;
}

/**
 * chromiumBrowsers with `spareBrowsers` pre-started Chromium (0: none), started at once. Call after
 * BrowserHomes.sweep: spares live in the same homes, so a killed broker's spares are swept too.
 */
export function chromiumLogins(
  s: Omit<ChromiumSettings, "spares"> & { readonly spareBrowsers: number; readonly registry: () => ServiceRegistry },
): ChromiumLogins {
  const spares =
    s.spareBrowsers > 0
      ? new SpareBrowsers({
          size: s.spareBrowsers,
          chromiumPath: s.chromiumPath,
          resolvableHosts: () => registryLoginHosts(s.registry()),
          premadeFor: () => soleLoginAllowlist(s.registry()),
          homesDir: s.homesDir,
          searchPath: s.searchPath,
          clock: s.clock ?? systemClock,
          log: s.log,
        })
      : undefined;
  spares?.fill();
  return {
    browsers: chromiumBrowsers({ ...s, ...(spares ? { spares } : {}) }),
    spareCount: () => spares?.size ?? 0,
    sparesReady: async () => (spares ? spares.ready() : 0),
    close: async () => spares?.close(),
  };
}
