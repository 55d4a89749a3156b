// Confinement of the login browser, layer by layer (Playwright's route does not see redirect hops,
// WebSockets or requests without a frame, so the route alone is not enough):
// - every request of every page, popup and frame passes `context.route("**/*")` first: allowed
//   hosts continue, the intercept prefix is answered here, anything else is blocked and reported
//   (navigations get a small "not part of the sign-in" page with a way back, subresources abort);
// - in the network stack, the login's browser context gets a proxy that cannot be reached and a
//   bypass list of exactly the allowed host:port pairs (a cold browser also gets them on its
//   command line, `--proxy-server` and `--proxy-bypass-list`), so anything the route missed
//   (a 302 to another host or port, a WebSocket, a worker's fetch) fails before leaving the
//   browser; redirect hops are still seen as `request` events, which report them and catch an
//   OAuth redirect to the intercept prefix;
// - `--host-resolver-rules` make every other host name fail to resolve, a per-host backstop (a
//   spare browser, started before its login is known, gets the union of the registry's login
//   hosts here and is handed only to a login whose hosts that union covers);
// - service workers are blocked; downloads are denied (`acceptDownloads: false`); file choosers
//   are intercepted and never answered (see page-guard.ts); dialogs are answered so a page never
//   hangs; there is no DevTools (headless, CDP over a pipe, no debugging port); Chromium gets an
//   allowlisted environment with a throw-away HOME, so no broker secret reaches it, and the page
//   lives in a fresh incognito-like context, so cookies and cache never touch the disk.
import os from "node:os";
import path from "node:path";
import type { BrowserContext, Page, Route } from "playwright-core";
import { type BrowserHooks, errorMessage } from "./hooks.js";
import { type HostAllowlist, resolverRules } from "./host-allowlist.js";
import { PAGE_GUARD_SCRIPT } from "./page-guard.js";
import { HopReporter, watchRedirectHops } from "./redirect-hops.js";

// Never resolves: ".invalid" is reserved (RFC 6761) and the host-resolver rules map it to NOTFOUND.
const UNREACHABLE_PROXY = "http://blocked.invalid:1";

// Flags from docs/toolchain: quiet on a closed network, no first-run UI, nothing phoning home.
const CHROMIUM_ARGS = [
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-breakpad",
  "--deny-permission-prompts",
  // WebRTC could reach hosts outside the allowlist over UDP (STUN); keep it off the network.
  "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
  // Fewer processes per login: no idle renderer kept ready for a next navigation (one process,
  // ~20 MB). Isolation is unchanged: a renderer is still started per site when a page needs it.
  "--disable-features=SpareRendererForSitePerProcess",
];

const DONE_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Signed in</title></head>
<body style="font: 16px system-ui, sans-serif; margin: 3rem auto; max-width: 30rem; padding: 0 1rem"><p>You can close this window.</p></body></html>`;

/** Chromium's command line for a browser confined to `allow`: the quiet flags and the network-stack confinement. */
export function chromiumArgs(allow: HostAllowlist): string[] {
  return [
    ...CHROMIUM_ARGS,
    `--proxy-server=${UNREACHABLE_PROXY}`,
    `--proxy-bypass-list=${allow.proxyBypassList()}`,
    `--host-resolver-rules=${allow.hostResolverRules()}`,
  ];
}

/**
 * Chromium's command line for a spare browser, before its login is known: the quiet flags, a proxy
 * that cannot be reached with nothing bypassing it (its default context reaches nothing), and
 * only `resolvable` host names resolving (see HostAllowlist.resolvableHosts).
 */
export function spareChromiumArgs(resolvable: Iterable<string>): string[] {
  return [
    ...CHROMIUM_ARGS,
    `--proxy-server=${UNREACHABLE_PROXY}`,
    "--proxy-bypass-list=<-loopback>",
    `--host-resolver-rules=${resolverRules(resolvable)}`,
  ];
}

/** The proxy of a login's browser context: unreachable, bypassed by exactly the allowed host:port pairs. */
export function contextProxy(allow: HostAllowlist): { server: string; bypass: string } {
  return { server: UNREACHABLE_PROXY, bypass: allow.proxyBypassRules().join(",") };
}

/**
 * A login's browser context, cold or pre-made on a spare: incognito-like (cookies and cache in
 * memory only), no downloads, no service workers, and the context proxy of `allow`.
 */
export function contextOptions(allow: HostAllowlist, viewport: { width: number; height: number }) {
  return {
    viewport,
    screen: viewport,
    deviceScaleFactor: 1,
    acceptDownloads: false,
    serviceWorkers: "block" as const,
    proxy: contextProxy(allow),
  };
}

/**
 * The environment Chromium gets: nothing of the broker's; HOME and XDG dirs in a directory of its
 * own; `searchPath` is the PATH config/ allows children (the browser never reads the broker's env).
 */
export function browserEnv(homeDir: string, searchPath: string): Record<string, string> {
  return {
    PATH: searchPath,
    HOME: homeDir,
    XDG_CONFIG_HOME: path.join(homeDir, ".config"),
    XDG_CACHE_HOME: path.join(homeDir, ".cache"),
    TMPDIR: os.tmpdir(),
    LANG: "C.UTF-8",
  };
}

/** What the confinement reports: the intercepted OAuth redirect, and every blocked request or hop. */
export interface ConfinementEvents {
  readonly intercept?: { prefix: string; onHit(url: string): void };
  readonly onBlockedNavigation?: (url: string) => void;
}

/**
 * Keeps one browser context on its allowed hosts: routes every request, reports redirect hops
 * (catching the OAuth redirect among them), guards every page against files, downloads and dialogs.
 */
export class Confinement {
  private hitIntercept = false;
  private readonly hops = new HopReporter((url) => this.onHop(url));

  constructor(
    private readonly allow: HostAllowlist,
    private readonly events: ConfinementEvents,
    private readonly hooks: BrowserHooks,
  ) {}

  /** Whether a request or hop reached the intercept prefix (the flow has what it came for). */
  get intercepted(): boolean {
    return this.hitIntercept;
  }

  /** Confines `ctx` before its first navigation; `main` is its first page. */
  async install(ctx: BrowserContext, main: Page): Promise<void> {
    // Redirect hops bypass the route; the network stack refuses them, and here they are reported:
    // from each page's own CDP session (see redirect-hops.ts), and from Playwright's event for
    // the hops of a popup's first requests, made before its session is attached.
    ctx.on("request", (req) => {
      if (req.redirectedFrom()) this.hops.hop(req.url());
    });
    // Independent of one another, so set up at once; all of them are in place before this resolves
    // (the caller navigates only then).
    await Promise.all([
      ctx.route("**/*", (route) => this.onRoute(route)),
      watchRedirectHops(ctx, main, this.hops),
      ctx.addInitScript(PAGE_GUARD_SCRIPT),
    ]);
    ctx.on("dialog", (d) => {
      // Nobody sees a dialog in a screencast: confirm and leave so the flow goes on, but answer no prompt.
      (d.type() === "prompt" ? d.dismiss() : d.accept()).catch(() => {});
    });
    this.guard(main);
  }

  /** Confines a popup the page opened: its redirect hops are watched on its own session. */
  popup(ctx: BrowserContext, page: Page): void {
    watchRedirectHops(ctx, page, this.hops).catch((err: unknown) => {
      if (!this.hooks.closing() && !page.isClosed())
        this.hooks.warn("login browser could not watch a popup's redirects", { error: errorMessage(err) });
    });
    this.guard(page);
  }

  /** Per page: file choosers and downloads are refused. */
  private guard(page: Page): void {
    // Listening turns on file-chooser interception; never answering it means no file is ever set.
    page.on("filechooser", () => this.hooks.warn("login browser refused a file chooser"));
    page.on("download", (d) => {
      this.hooks.warn("login browser refused a download");
      d.cancel().catch(() => {});
    });
  }

  private async onRoute(route: Route): Promise<void> {
    const req = route.request();
    const url = req.url();
    const intercept = this.events.intercept;
    try {
      if (intercept && url.startsWith(intercept.prefix)) {
        this.hit(url);
        await route.fulfill({
          status: 200,
          contentType: "text/html; charset=utf-8",
          headers: { "cache-control": "no-store" },
          body: DONE_PAGE,
        });
      } else if (isLocalUrl(url) || this.allow.allowsUrl(url)) {
        await route.continue();
      } else {
        this.report(url);
        if (req.isNavigationRequest()) {
          await route.fulfill({
            status: 403,
            contentType: "text/html; charset=utf-8",
            headers: {
              "cache-control": "no-store",
              "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'",
            },
            body: blockedPage(hostOf(url)),
          });
        } else {
          await route.abort("blockedbyclient");
        }
      }
    } catch (err) {
      // The page or browser went away mid-request; nothing is left to answer.
      if (!this.hooks.closing()) this.hooks.warn("login browser route failed", { error: errorMessage(err) });
    }
  }

  /** A redirect hop to `url`: the OAuth callback if it is the intercept prefix, else blocked unless allowed. */
  private onHop(url: string): void {
    if (this.hooks.closing()) return;
    const intercept = this.events.intercept;
    if (intercept && url.startsWith(intercept.prefix)) this.hit(url);
    else if (!isLocalUrl(url) && !this.allow.allowsUrl(url)) this.report(url);
  }

  private hit(url: string): void {
    this.hitIntercept = true;
    const cb = this.events.intercept?.onHit;
    if (cb) this.hooks.safely(() => cb(url));
  }

  private report(url: string): void {
    const cb = this.events.onBlockedNavigation;
    if (cb) this.hooks.safely(() => cb(url));
  }
}

function blockedPage(host: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Not part of the sign-in</title></head>
<body style="font: 16px system-ui, sans-serif; margin: 3rem auto; max-width: 30rem; padding: 0 1rem">
<h1 style="font-size: 1.2rem">This page is not part of the sign-in</h1>
<p>This window only opens the service's sign-in pages; <b>${escapeHtml(host)}</b> is not one of them.</p>
<p><button type="button" autofocus onclick="history.length > 1 ? history.back() : window.close()">Go back</button></p></body></html>`;
}

function isLocalUrl(url: string): boolean {
  return url.startsWith("data:") || url.startsWith("blob:") || url === "about:blank" || url === "about:srcdoc";
}

function hostOf(url: string): string {
  try {
    return new URL(url).host || url.slice(0, 64);
  } catch {
    return url.slice(0, 64);
  }
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
