// The confined login browser: one headless Chromium with a fresh profile, confined to a service's
// login hosts (confinement.ts), streamed as a JPEG screencast (screencast.ts), driven by relayed
// mouse, keyboard and text input (input-relay.ts), and killed with every process it started
// (teardown.ts). This file launches it and wires the parts together.
import type { Browser, BrowserContext, Page } from "playwright-core";
import { type Clock, systemClock } from "../../clock/clock.js";
import { traceLogin } from "../trace.js";
import { launchChromium } from "./chromium-process.js";
import { Confinement, chromiumArgs, contextOptions } from "./confinement.js";
import type { DeferredRefill } from "./deferred-refill.js";
import { ConfinedBrowserError } from "./errors.js";
import { type BrowserHooks, errorMessage } from "./hooks.js";
import { HostAllowlist } from "./host-allowlist.js";
import { InputRelay, type MouseInput } from "./input-relay.js";
import { usePremade } from "./premade-page.js";
import { type BrowserPid, browserProcesses } from "./process-tree.js";
import { Screencast, type ScreencastFrame } from "./screencast.js";
import { checkSize, type Size } from "./sizes.js";
import type { SpareBrowsers, SpareProcess } from "./spare-browsers.js";
import { terminate } from "./teardown.js";

export type { MouseInput } from "./input-relay.js";
export type { ScreencastFrame } from "./screencast.js";

/** What to confine the browser to and where its output goes. */
export interface ConfinedBrowserOptions {
  /** The Chromium executable, e.g. Debian's /usr/bin/chromium. */
  chromiumPath: string;
  /** Host patterns the browser may load: "idp.example.com", "*.example.com", "127.0.0.1:4567" (see host-allowlist.ts). */
  allowedHosts: readonly string[];
  /** The first page; must be on an allowed host. */
  startUrl: string;
  /** CSS viewport; default 1024x768 (phones can ask 390x844). */
  viewport?: { width: number; height: number };
  /** Largest frame image sent, in pixels; default the viewport. Smaller saves bandwidth; input is scaled back. */
  maxFrameSize?: { width: number; height: number };
  onFrame(frame: ScreencastFrame): void;
  /** A request or navigation outside allowedHosts was blocked (called for each one, subresources included). */
  onBlockedNavigation?(url: string): void;
  /** Whether a window.open popup is now shown (called when that changes). */
  onPopupChange?(open: boolean): void;
  /** Requests whose URL starts with `prefix` are answered here (never reach the network) and reported: the OAuth redirect. */
  intercept?: { prefix: string; onHit(url: string): void };
  /** Where the browser's own HOME directory is made (default the system temp dir): a directory the owner sweeps after a crash. */
  homeParent?: string;
  /** Chromium's PATH (config/ decides it, e.g. Config.childBaseEnv.PATH); default "/usr/bin:/bin". */
  searchPath?: string;
  /** Times the close grace period (default the system clock). */
  clock?: Clock;
  /** Pre-started Chromium to take instead of starting one (see spare-browsers.ts); a cold start when none fits. */
  spares?: SpareBrowsers;
  log?: { warn(msg: string, f?: Record<string, unknown>): void };
}

/** A cookie of one of the allowed hosts, as Chromium holds it. */
export interface BrowserCookie {
  name: string;
  value: string;
  domain: string;
  path: string;
  /** Unix seconds; absent for a session cookie. */
  expires?: number;
  httpOnly?: boolean;
  secure?: boolean;
  sameSite?: "Strict" | "Lax" | "None";
}

const DEFAULT_VIEWPORT = { width: 1024, height: 768 };
/** Playwright's own bound on the first navigation. */
const START_TIMEOUT_MS = 20_000;
/** The longest the viewer waits after the start page commits for its DOMContentLoaded before frames flow anyway. */
const SHOW_BOUND_MS = 3_000;

/**
 * A headless Chromium confined to a login's hosts, streamed frame by frame and driven by relayed
 * input. Input methods never reject: input racing a closing page is dropped (and logged).
 */
export class ConfinedBrowser {
  private closing: Promise<void> | undefined;
  /** The replacement spare, started once the person pauses (see deferred-refill.ts). */
  private refill: DeferredRefill | undefined;
  private lastUrl: string;
  private readonly hooks: BrowserHooks;
  private readonly confinement: Confinement;
  private readonly screencast: Screencast;
  private readonly relay: InputRelay;

  private constructor(
    private readonly browser: Browser,
    private readonly ctx: BrowserContext,
    private readonly main: Page,
    private readonly opts: ConfinedBrowserOptions,
    private readonly allow: HostAllowlist,
    private readonly homeDir: string,
    private readonly browserPid: BrowserPid | undefined,
    frameMax: { width: number; height: number },
  ) {
    this.lastUrl = opts.startUrl;
    this.hooks = {
      closing: () => this.closing !== undefined,
      warn: (msg, f) => this.opts.log?.warn(msg, f),
      safely: (fn) => {
        try {
          fn();
        } catch (err) {
          this.opts.log?.warn("login browser callback threw", { error: errorMessage(err) });
        }
      },
    };
    this.confinement = new Confinement(
      allow,
      {
        ...(opts.intercept ? { intercept: opts.intercept } : {}),
        ...(opts.onBlockedNavigation ? { onBlockedNavigation: (u: string) => opts.onBlockedNavigation?.(u) } : {}),
      },
      this.hooks,
    );
    this.screencast = new Screencast(
      ctx,
      main,
      frameMax,
      {
        onFrame: (f) => opts.onFrame(f),
        ...(opts.onPopupChange ? { onPopupChange: (o: boolean) => opts.onPopupChange?.(o) } : {}),
      },
      this.hooks,
    );
    this.relay = new InputRelay(
      () => this.screencast.onScreen(),
      () => this.screencast.geometry,
      this.hooks,
    );
  }

  /** Starts Chromium on `opts.startUrl` and begins the screencast; throws ConfinedBrowserError. */
  static async launch(opts: ConfinedBrowserOptions): Promise<ConfinedBrowser> {
    const allow = HostAllowlist.parse(opts.allowedHosts);
    if (!allow.allowsUrl(opts.startUrl))
      throw new ConfinedBrowserError("invalid_options", "startUrl is not on an allowed host");
    if (opts.intercept && allow.allowsUrl(opts.intercept.prefix)) {
      // Redirect hops are only held back in the network stack, which lets allowed hosts through.
      opts.log?.warn("login browser intercept prefix is on an allowed host; a redirect to it would reach the network");
    }
    const viewport = checkSize("viewport", opts.viewport ?? DEFAULT_VIEWPORT);
    const frameMax = checkSize("maxFrameSize", opts.maxFrameSize ?? viewport);
    const clock = opts.clock ?? systemClock;
    // A spare was started before this login was known: only this login's context confines it.
    const proc: SpareProcess =
      (await opts.spares?.take(allow)) ??
      (await launchChromium({
        chromiumPath: opts.chromiumPath,
        args: chromiumArgs(allow),
        homeParent: opts.homeParent,
        searchPath: opts.searchPath,
      }));
    traceLogin("spare_taken");
    const refill = opts.spares?.deferredFill();
    try {
      const confined = await ConfinedBrowser.open(proc, opts, allow, viewport, frameMax, clock);
      confined.refill = refill;
      return confined;
    } catch (err) {
      refill?.now();
      throw err;
    }
  }

  /** Confines a fresh context on `proc` and opens the start page; on failure `proc` is killed. */
  private static async open(
    proc: SpareProcess,
    opts: ConfinedBrowserOptions,
    allow: HostAllowlist,
    viewport: Size,
    frameMax: Size,
    clock: Clock,
  ): Promise<ConfinedBrowser> {
    const { browser, browserPid, homeDir } = proc;
    let ctx: BrowserContext;
    let main: Page;
    try {
      // A fresh incognito-like context (the spare's pre-made one when it was made for this allowlist).
      const premade = await usePremade(proc.premade, allow, viewport);
      ctx = premade?.ctx ?? (await browser.newContext(contextOptions(allow, viewport)));
      traceLogin("context_created");
      main = premade?.main ?? (await ctx.newPage());
      traceLogin("page_created");
    } catch (err) {
      await terminate({ browser, browserPid, homeDir }, clock, () => {});
      throw new ConfinedBrowserError("launch_failed", "Chromium started but opened no page", { cause: err });
    }
    const confined = new ConfinedBrowser(browser, ctx, main, opts, allow, homeDir, browserPid, frameMax);
    try {
      await confined.start();
    } catch (err) {
      await confined.close();
      throw new ConfinedBrowserError("start_failed", "the login page did not open", { cause: err });
    }
    return confined;
  }

  private async start(): Promise<void> {
    await this.confinement.install(this.ctx, this.main);
    traceLogin("confined");
    // The viewer's first frame is the login page at its DOMContentLoaded, never the blank page before it.
    this.main.once("domcontentloaded", () => {
      traceLogin("dom_content_loaded");
      this.screencast.show();
    });
    this.ctx.on("page", (p) => {
      if (this.closing) return;
      this.confinement.popup(this.ctx, p);
      this.screencast.push(p);
    });
    await this.screencast.start();
    traceLogin("screencast_started");
    try {
      await this.main.goto(this.opts.startUrl, { waitUntil: "commit", timeout: START_TIMEOUT_MS });
      traceLogin("navigation_committed");
    } catch (err) {
      // An identity provider that signs the user in at once redirects straight to the intercepted
      // callback; the refused hop fails the navigation, yet the flow has what it came for.
      if (!this.confinement.intercepted) throw err;
      this.screencast.show();
    }
    // A page slow to parse is shown as far as it got (Playwright's own timer: the clock option times teardown only).
    void this.main
      .waitForEvent("domcontentloaded", { timeout: SHOW_BOUND_MS })
      .catch(() => {})
      .then(() => this.screencast.show());
  }

  /** Mouse input at (x, y) in frame pixels; down/up move there first. */
  mouse(e: MouseInput): Promise<void> {
    this.refill?.input();
    return this.relay.mouse(e);
  }

  /** Scrolls by (deltaX, deltaY) CSS pixels with the pointer at (x, y) in frame pixels. */
  wheel(e: { x: number; y: number; deltaX: number; deltaY: number }): Promise<void> {
    this.refill?.input();
    return this.relay.wheel(e);
  }

  /** A key press or release; `key` is a KeyboardEvent.key value ("Enter", "Backspace", "a"…). */
  key(e: { type: "down" | "up"; key: string }): Promise<void> {
    this.refill?.input();
    return this.relay.key(e);
  }

  /** Inserts text at the focus, as an IME would (no key events). */
  text(s: string): Promise<void> {
    this.refill?.input();
    return this.relay.text(s);
  }

  /** Cookies of the allowed hosts (any cookie an allowed host would be sent). */
  async cookies(): Promise<BrowserCookie[]> {
    const all = await this.ctx.cookies();
    return all
      .filter((c) => this.allow.allowsCookieDomain(c.domain))
      .map((c) => ({
        name: c.name,
        value: c.value,
        domain: c.domain,
        path: c.path,
        ...(c.expires >= 0 ? { expires: c.expires } : {}),
        httpOnly: c.httpOnly,
        secure: c.secure,
        sameSite: c.sameSite,
      }));
  }

  /** The main page's URL (popups aside). */
  currentUrl(): string {
    if (!this.main.isClosed()) this.lastUrl = this.main.url();
    return this.lastUrl;
  }

  /** Pids of this browser's live processes (the browser, its children, its crashpad handlers). */
  pids(): number[] {
    return browserProcesses(this.browserPid, this.homeDir);
  }

  /** Closes the browser and deletes its profile; idempotent; kills the process tree if closing hangs. */
  close(): Promise<void> {
    // Assigned before shutdown starts, so every handler already sees the browser as closing.
    this.closing ??= Promise.resolve().then(() => {
      this.currentUrl();
      const remains = { browser: this.browser, browserPid: this.browserPid, homeDir: this.homeDir };
      // The replacement starts once this browser is gone, not competing with its teardown.
      return terminate(remains, this.opts.clock ?? systemClock, this.hooks.warn).finally(() => this.refill?.now());
    });
    return this.closing;
  }
}
