import type { Logger } from "../log/logger.js";
import type { LoginBrowserFactory } from "./login-service.js";

/**
 * The production login browser: Debian's Chromium driven by playwright-core (loaded on first use).
 * With `homesDir` (a BrowserHomes directory), each browser's HOME is made there so a restart can sweep it.
 */
export function chromiumBrowsers(chromiumPath: string, log: Logger, homesDir?: string): LoginBrowserFactory {
  return async (req) => {
    const { ConfinedBrowser } = await import("./browser/confined-browser.js");
    return ConfinedBrowser.launch({
      chromiumPath,
      allowedHosts: req.allowedHosts,
      startUrl: req.startUrl,
      viewport: req.viewport,
      onFrame: (f) => req.onFrame({ data: f.data, width: f.width, height: f.height, popup: f.popup }),
      onBlockedNavigation: req.onBlockedNavigation,
      ...(req.intercept ? { intercept: req.intercept } : {}),
      ...(homesDir ? { homeParent: homesDir } : {}),
      log: { warn: (msg, f) => log.warn(msg, f as Record<string, string>) },
    });
  };
}
