// The confined login browser: one headless Chromium with a fresh profile, confined to a service's
// login hosts, streamed as a JPEG screencast and driven by relayed mouse, keyboard and text input.
//
// Confinement, layer by layer (Playwright's route does not see redirect hops, WebSockets or
// requests without a frame, so the route alone is not enough):
// - every request of every page, popup and frame passes `context.route("**/*")` first: allowed
//   hosts continue, the intercept prefix is answered here, anything else is blocked and reported
//   (navigations get a small "not part of the sign-in" page with a way back, subresources abort);
// - in the network stack, `--proxy-server` names a proxy that cannot be reached and
//   `--proxy-bypass-list` lists exactly the allowed host:port pairs, so anything the route missed
//   (a 302 to another host or port, a WebSocket, a worker's fetch) fails before leaving the
//   browser; redirect hops are still seen as `request` events, which report them and catch an
//   OAuth redirect to the intercept prefix;
// - `--host-resolver-rules` make every other host name fail to resolve, a per-host backstop;
// - service workers are blocked; downloads are denied (`acceptDownloads: false`); file choosers
//   are intercepted and never answered (see page-guard.ts); dialogs are answered so a page never
//   hangs; there is no DevTools (headless, CDP over a pipe, no debugging port); Chromium gets an
//   allowlisted environment with a throw-away HOME, so no broker secret reaches it, and the page
//   lives in a fresh incognito-like context, so cookies and cache never touch the disk.
import { accessSync, constants as fsConstants, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page, type Route } from "playwright-core";
import { ConfinedBrowserError } from "./errors.js";
import { HostAllowlist } from "./host-allowlist.js";
import { jpegSize } from "./jpeg-size.js";
import { PAGE_GUARD_SCRIPT } from "./page-guard.js";
import { captureFrame } from "./capture-frame.js";
import { HopReporter, watchRedirectHops } from "./redirect-hops.js";
import { browserProcesses, findBrowserPid, isRunning, killAll, isSameProcess, type BrowserPid } from "./process-tree.js";

/** One screencast frame: a JPEG of the page currently shown (the main page or a popup). */
export interface ScreencastFrame {
  /** JPEG bytes. */
  data: Buffer;
  /** Image size in pixels: the coordinate space of input sent back. */
  width: number;
  height: number;
  /** The page's viewport in CSS pixels. */
  pageWidth: number;
  pageHeight: number;
  /** Whether the frame shows a window.open popup rather than the main page. */
  popup: boolean;
}

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

/** Mouse input, in the pixel space of the last frame sent. */
export interface MouseInput {
  type: "move" | "down" | "up";
  x: number;
  y: number;
  button?: "left" | "right" | "middle";
  clickCount?: number;
}

const DEFAULT_VIEWPORT = { width: 1024, height: 768 };
const CLOSE_GRACE_MS = 3_000;
const START_TIMEOUT_MS = 20_000;
const JPEG_QUALITY = 60;
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
];

const DONE_PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Signed in</title></head>
<body style="font: 16px system-ui, sans-serif; margin: 3rem auto; max-width: 30rem; padding: 0 1rem"><p>You can close this window.</p></body></html>`;

function blockedPage(host: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Not part of the sign-in</title></head>
<body style="font: 16px system-ui, sans-serif; margin: 3rem auto; max-width: 30rem; padding: 0 1rem">
<h1 style="font-size: 1.2rem">This page is not part of the sign-in</h1>
<p>This window only opens the service's sign-in pages; <b>${escapeHtml(host)}</b> is not one of them.</p>
<p><button type="button" autofocus onclick="history.length > 1 ? history.back() : window.close()">Go back</button></p></body></html>`;
}

/** The screencast currently streamed: one page on its own CDP session. */
interface Cast {
  readonly page: Page;
  readonly cdp: CDPSession;
  /** Whether a frame of this cast has reached onFrame. */
  shown: boolean;
}

/** What input coordinates are relative to: the last frame sent. */
interface FrameGeometry {
  readonly width: number;
  readonly height: number;
  readonly pageWidth: number;
  readonly pageHeight: number;
}

/**
 * A headless Chromium confined to a login's hosts, streamed frame by frame and driven by relayed
 * input. Input methods never reject: input racing a closing page is dropped (and logged).
 */
export class ConfinedBrowser {
  /** Open pages, the main page first; the last one is on screen (popups stack on top). */
  private readonly pages: Page[] = [];
  private cast: Cast | undefined;
  private frame: FrameGeometry | undefined;
  /** Screencast switches and input each run one at a time, in call order. */
  private switching: Promise<void> = Promise.resolve();
  private inputs: Promise<void> = Promise.resolve();
  private closing: Promise<void> | undefined;
  private lastUrl: string;
  private popupShown = false;
  private intercepted = false;
  private readonly hops = new HopReporter((url) => this.onHop(url));

  private constructor(
    private readonly browser: Browser,
    private readonly ctx: BrowserContext,
    private readonly main: Page,
    private readonly opts: ConfinedBrowserOptions,
    private readonly allow: HostAllowlist,
    private readonly homeDir: string,
    private readonly browserPid: BrowserPid | undefined,
    private readonly frameMax: { width: number; height: number },
  ) {
    this.lastUrl = opts.startUrl;
    this.pages.push(main);
  }

  /** Starts Chromium on `opts.startUrl` and begins the screencast; throws ConfinedBrowserError. */
  static async launch(opts: ConfinedBrowserOptions): Promise<ConfinedBrowser> {
    const allow = HostAllowlist.parse(opts.allowedHosts);
    if (!allow.allowsUrl(opts.startUrl)) throw new ConfinedBrowserError("invalid_options", "startUrl is not on an allowed host");
    if (opts.intercept && allow.allowsUrl(opts.intercept.prefix)) {
      // Redirect hops are only held back in the network stack, which lets allowed hosts through.
      opts.log?.warn("login browser intercept prefix is on an allowed host; a redirect to it would reach the network");
    }
    const viewport = checkSize("viewport", opts.viewport ?? DEFAULT_VIEWPORT);
    const frameMax = checkSize("maxFrameSize", opts.maxFrameSize ?? viewport);

    try {
      // Checked here because Playwright leaks its temporary directories when the executable is missing.
      accessSync(opts.chromiumPath, fsConstants.X_OK);
    } catch (err) {
      throw new ConfinedBrowserError("launch_failed", `Chromium is not an executable at ${opts.chromiumPath}`, { cause: err });
    }
    // Chromium's HOME: crashpad's database and anything else it writes outside the profile land
    // here, and it marks every process of this browser (see process-tree.ts).
    const homeDir = mkdtempSync(path.join(opts.homeParent ?? os.tmpdir(), "slaude-login-"));
    let browser: Browser;
    try {
      browser = await chromium.launch({
        executablePath: opts.chromiumPath,
        headless: true,
        // Root cannot use Chromium's sandbox; anyone else keeps it.
        chromiumSandbox: process.getuid?.() !== 0,
        args: [
          ...CHROMIUM_ARGS,
          `--proxy-server=${UNREACHABLE_PROXY}`,
          `--proxy-bypass-list=${allow.proxyBypassList()}`,
          `--host-resolver-rules=${allow.hostResolverRules()}`,
        ],
        env: browserEnv(homeDir),
        // The owner closes browsers on shutdown; Playwright's own SIGINT handler would exit the broker.
        handleSIGINT: false,
        handleSIGTERM: false,
        handleSIGHUP: false,
        timeout: START_TIMEOUT_MS,
      });
    } catch (err) {
      rmSync(homeDir, { recursive: true, force: true });
      throw new ConfinedBrowserError("launch_failed", `Chromium did not start (${opts.chromiumPath})`, { cause: err });
    }
    const browserPid = findBrowserPid(homeDir);
    let ctx: BrowserContext;
    let main: Page;
    try {
      // A fresh incognito-like context: cookies and cache stay in memory, never on disk.
      ctx = await browser.newContext({ viewport, screen: viewport, deviceScaleFactor: 1, acceptDownloads: false, serviceWorkers: "block" });
      main = await ctx.newPage();
    } catch (err) {
      await terminate(browser, browserPid, homeDir, () => {});
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
    const { ctx, main } = this;
    await ctx.route("**/*", (route) => this.onRoute(route));
    // Redirect hops bypass the route; the network stack refuses them, and here they are reported:
    // from each page's own CDP session (see redirect-hops.ts), and from Playwright's event for
    // the hops of a popup's first requests, made before its session is attached.
    ctx.on("request", (req) => {
      if (req.redirectedFrom()) this.hops.hop(req.url());
    });
    await watchRedirectHops(ctx, main, this.hops);
    await ctx.addInitScript(PAGE_GUARD_SCRIPT);
    ctx.on("dialog", (d) => {
      // Nobody sees a dialog in a screencast: confirm and leave so the flow goes on, but answer no prompt.
      (d.type() === "prompt" ? d.dismiss() : d.accept()).catch(() => {});
    });
    ctx.on("page", (p) => this.onPage(p));
    this.watch(main);
    this.schedule();
    await this.switching;
    try {
      await main.goto(this.opts.startUrl, { waitUntil: "commit", timeout: START_TIMEOUT_MS });
    } catch (err) {
      // An identity provider that signs the user in at once redirects straight to the intercepted
      // callback; the refused hop fails the navigation, yet the flow has what it came for.
      if (!this.intercepted) throw err;
    }
  }

  /** Mouse input at (x, y) in frame pixels; down/up move there first. */
  mouse(e: MouseInput): Promise<void> {
    return this.input("mouse", async (page, at) => {
      const p = at(e.x, e.y);
      await page.mouse.move(p.x, p.y);
      const opts = { button: e.button ?? "left", clickCount: e.clickCount ?? 1 } as const;
      if (e.type === "down") await page.mouse.down(opts);
      else if (e.type === "up") await page.mouse.up(opts);
    });
  }

  /** Scrolls by (deltaX, deltaY) CSS pixels with the pointer at (x, y) in frame pixels. */
  wheel(e: { x: number; y: number; deltaX: number; deltaY: number }): Promise<void> {
    return this.input("wheel", async (page, at) => {
      const p = at(e.x, e.y);
      await page.mouse.move(p.x, p.y);
      await page.mouse.wheel(finite(e.deltaX), finite(e.deltaY));
    });
  }

  /** A key press or release; `key` is a KeyboardEvent.key value ("Enter", "Backspace", "a"…). */
  key(e: { type: "down" | "up"; key: string }): Promise<void> {
    const key = playwrightKey(e.key);
    return this.input("key", async (page) => {
      try {
        await (e.type === "down" ? page.keyboard.down(key) : page.keyboard.up(key));
      } catch (err) {
        if (!/Unknown key/.test(errorMessage(err))) throw err;
        // A character outside Playwright's US layout ("é", "ß") is typed as text; other unknown
        // keys ("Dead", "Unidentified", "Process" from IMEs) carry nothing to type.
        if (e.type === "down" && [...e.key].length === 1) await page.keyboard.insertText(e.key);
      }
    });
  }

  /** Inserts text at the focus, as an IME would (no key events). */
  text(s: string): Promise<void> {
    return this.input("text", (page) => page.keyboard.insertText(s));
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
    this.closing ??= Promise.resolve().then(() => this.shutdown());
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.currentUrl();
    await terminate(this.browser, this.browserPid, this.homeDir, (msg, f) => this.warn(msg, f));
  }

  private async onRoute(route: Route): Promise<void> {
    const req = route.request();
    const url = req.url();
    const intercept = this.opts.intercept;
    try {
      if (intercept && url.startsWith(intercept.prefix)) {
        this.hit(url);
        await route.fulfill({ status: 200, contentType: "text/html; charset=utf-8", headers: { "cache-control": "no-store" }, body: DONE_PAGE });
      } else if (isLocalUrl(url) || this.allow.allowsUrl(url)) {
        await route.continue();
      } else {
        this.report(url);
        if (req.isNavigationRequest()) {
          await route.fulfill({
            status: 403,
            contentType: "text/html; charset=utf-8",
            headers: { "cache-control": "no-store", "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'" },
            body: blockedPage(hostOf(url)),
          });
        } else {
          await route.abort("blockedbyclient");
        }
      }
    } catch (err) {
      // The page or browser went away mid-request; nothing is left to answer.
      if (!this.closing) this.warn("login browser route failed", { error: errorMessage(err) });
    }
  }

  private onPage(page: Page): void {
    if (this.closing) return;
    watchRedirectHops(this.ctx, page, this.hops).catch((err: unknown) => {
      if (!this.closing && !page.isClosed()) this.warn("login browser could not watch a popup's redirects", { error: errorMessage(err) });
    });
    this.pages.push(page);
    this.watch(page);
    this.setPopupShown(this.pages.length > 1);
    this.schedule();
  }

  /** Per-page wiring: file choosers, downloads, and the screencast falling back when a popup closes. */
  private watch(page: Page): void {
    // Listening turns on file-chooser interception; never answering it means no file is ever set.
    page.on("filechooser", () => this.warn("login browser refused a file chooser"));
    page.on("download", (d) => {
      this.warn("login browser refused a download");
      d.cancel().catch(() => {});
    });
    page.once("close", () => {
      const i = this.pages.indexOf(page);
      if (i >= 0) this.pages.splice(i, 1);
      if (this.closing) return;
      if (page === this.main) this.warn("login browser main page closed itself");
      this.setPopupShown(this.pages.length > 1);
      this.schedule();
    });
  }

  private setPopupShown(open: boolean): void {
    if (open === this.popupShown) return;
    this.popupShown = open;
    const cb = this.opts.onPopupChange;
    if (cb) this.safely(() => cb(open));
  }

  /** Points the screencast at the top page, after any switch already under way. */
  private schedule(): void {
    this.switching = this.switching
      .then(() => this.castTop())
      .catch((err: unknown) => {
        if (!this.closing) this.warn("login browser screencast switch failed", { error: errorMessage(err) });
      });
  }

  private async castTop(): Promise<void> {
    const top = this.pages.at(-1);
    if (this.closing || !top || this.cast?.page === top) return;
    const prev = this.cast;
    this.cast = undefined;
    if (prev && !prev.page.isClosed()) {
      await prev.cdp.send("Page.stopScreencast").catch(() => {});
      await prev.cdp.detach().catch(() => {});
    }
    if (top.isClosed()) return; // its close event schedules the next switch
    const cdp = await this.ctx.newCDPSession(top);
    const cast: Cast = { page: top, cdp, shown: false };
    this.cast = cast;
    cdp.on("Page.screencastFrame", (f) => {
      // Chromium sends the next frame only after this ack, so ack every one, even those dropped.
      cdp.send("Page.screencastFrameAck", { sessionId: f.sessionId }).catch(() => {});
      this.emitFrame(cast, Buffer.from(f.data, "base64"), f.metadata.deviceWidth, f.metadata.deviceHeight);
    });
    await cdp.send("Page.startScreencast", { format: "jpeg", quality: JPEG_QUALITY, maxWidth: this.frameMax.width, maxHeight: this.frameMax.height, everyNthFrame: 1 });
    // An idle page may draw nothing for a new screencast: make sure the viewer gets a current
    // frame of the page now on screen. Not awaited, so a slow capture never holds up a switch.
    captureFrame(cdp, this.frameMax, JPEG_QUALITY).then(
      (shot) => {
        if (!cast.shown) this.emitFrame(cast, shot.data, shot.pageWidth, shot.pageHeight);
      },
      (err: unknown) => {
        if (this.cast === cast && !this.closing && !top.isClosed()) this.warn("login browser could not capture a frame", { error: errorMessage(err) });
      },
    );
  }

  /** Sends a frame of `cast` to the viewer, if that cast is still the one on screen. */
  private emitFrame(cast: Cast, data: Buffer, pageWidth: number | undefined, pageHeight: number | undefined): void {
    if (this.cast !== cast || this.closing) return;
    const size = jpegSize(data);
    if (!size) {
      this.warn("login browser dropped an unreadable frame");
      return;
    }
    const geometry: FrameGeometry = { width: size.width, height: size.height, pageWidth: pageWidth ?? size.width, pageHeight: pageHeight ?? size.height };
    this.frame = geometry;
    cast.shown = true;
    const popup = cast.page !== this.main;
    this.safely(() => this.opts.onFrame({ data, ...geometry, popup }));
  }

  /** Runs one input on the page on screen, after the inputs before it; drops it if there is none. */
  private input(kind: string, run: (page: Page, at: (x: number, y: number) => { x: number; y: number }) => Promise<void>): Promise<void> {
    const next = this.inputs.then(async () => {
      const page = this.cast?.page ?? this.pages.at(-1);
      if (this.closing || !page || page.isClosed()) return;
      try {
        await run(page, (x, y) => this.toPage(x, y));
      } catch (err) {
        if (!this.closing && !page.isClosed()) this.warn("login browser input failed", { kind, error: errorMessage(err) });
      }
    });
    this.inputs = next;
    return next;
  }

  /** Frame pixels to CSS pixels of the page, clamped to the viewport. */
  private toPage(x: number, y: number): { x: number; y: number } {
    const f = this.frame;
    if (!f) return { x: Math.max(0, finite(x)), y: Math.max(0, finite(y)) };
    return {
      x: clamp((finite(x) * f.pageWidth) / f.width, f.pageWidth),
      y: clamp((finite(y) * f.pageHeight) / f.height, f.pageHeight),
    };
  }

  /** A redirect hop to `url`: the OAuth callback if it is the intercept prefix, else blocked unless allowed. */
  private onHop(url: string): void {
    if (this.closing) return;
    const intercept = this.opts.intercept;
    if (intercept && url.startsWith(intercept.prefix)) this.hit(url);
    else if (!isLocalUrl(url) && !this.allow.allowsUrl(url)) this.report(url);
  }

  private hit(url: string): void {
    this.intercepted = true;
    const cb = this.opts.intercept?.onHit;
    if (cb) this.safely(() => cb(url));
  }

  private report(url: string): void {
    const cb = this.opts.onBlockedNavigation;
    if (cb) this.safely(() => cb(url));
  }

  /** Runs a caller's callback; its failure must not break the browser's event handling. */
  private safely(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.warn("login browser callback threw", { error: errorMessage(err) });
    }
  }

  private warn(msg: string, f?: Record<string, unknown>): void {
    this.opts.log?.warn(msg, f);
  }
}

/**
 * Closes `browser`; if that takes over CLOSE_GRACE_MS, SIGKILLs its process group. Either way it
 * then kills whatever is left of it (the crashpad handlers live outside the group) and deletes
 * `homeDir`. Playwright deletes the profile directory itself once the browser process has exited.
 */
async function terminate(browser: Browser, browserPid: BrowserPid | undefined, homeDir: string, warn: (msg: string, f?: Record<string, unknown>) => void): Promise<void> {
  const known = browserProcesses(browserPid, homeDir);
  const closed = browser.close().then(
    () => true,
    (err: unknown) => {
      warn("login browser close failed", { error: errorMessage(err) });
      return false;
    },
  );
  const graceful = await within(closed, CLOSE_GRACE_MS, false);
  if (!graceful) warn("login browser did not close in time; killing its processes", { pid: browserPid?.pid });
  for (let round = 0; round < 100; round++) {
    const left = [...new Set([...known.filter(isRunning), ...browserProcesses(browserPid, homeDir)])];
    if (left.length === 0) break;
    // The group is the browser's pid (Playwright starts it detached); kill it only while that pid is still ours.
    killAll(left, !graceful && round === 0 && browserPid && isSameProcess(browserPid) ? browserPid.pid : undefined);
    await delay(20);
  }
  // Playwright notices the exit and removes its profile directory; wait for that, briefly.
  await within(closed, CLOSE_GRACE_MS, false);
  rmSync(homeDir, { recursive: true, force: true, maxRetries: 3 });
}

/** The environment Chromium gets: nothing of the broker's; HOME and XDG dirs in a directory of its own. */
function browserEnv(homeDir: string): Record<string, string> {
  return {
    PATH: process.env["PATH"] ?? "/usr/bin:/bin",
    HOME: homeDir,
    XDG_CONFIG_HOME: path.join(homeDir, ".config"),
    XDG_CACHE_HOME: path.join(homeDir, ".cache"),
    TMPDIR: os.tmpdir(),
    LANG: "C.UTF-8",
  };
}

function checkSize(name: string, s: { width: number; height: number }): { width: number; height: number } {
  const ok = (n: number) => Number.isInteger(n) && n >= 100 && n <= 4096;
  if (!ok(s.width) || !ok(s.height)) throw new ConfinedBrowserError("invalid_options", `${name} must be whole pixels between 100 and 4096`);
  return { width: s.width, height: s.height };
}

// KeyboardEvent.key values that Playwright names differently.
const KEY_ALIASES: Record<string, string> = { " ": "Space", Spacebar: "Space", Esc: "Escape", Left: "ArrowLeft", Right: "ArrowRight", Up: "ArrowUp", Down: "ArrowDown", Del: "Delete", OS: "Meta", Win: "Meta" };

function playwrightKey(key: string): string {
  return KEY_ALIASES[key] ?? key;
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

function finite(n: number): number {
  return Number.isFinite(n) ? n : 0;
}

function clamp(n: number, size: number): number {
  return Math.min(Math.max(0, n), Math.max(0, size - 1));
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `p`'s value, or `fallback` if it has not settled within `ms`. */
async function within<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
