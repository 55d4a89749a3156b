import type { Clock } from "../../clock/clock.js";
import type { Logger } from "../../log/logger.js";
import type { LoginBrowserFactory } from "../ports.js";

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
      log: { warn: (msg, f) => s.log.warn(msg, f as Record<string, string>) },
    });
  };
}
