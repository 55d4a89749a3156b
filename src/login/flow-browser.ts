// A flow's one confined browser: its start for the viewer (with the status lines they see, and
// what happens when it cannot start), Chromium started on the flow's allowed hosts with its frames
// streamed to the viewer, and the viewer's mouse, wheel, keys and text forwarded to it.

import { errorMessage } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";
import type { FlowOutcomes } from "./flow-outcome.js";
import type { Flow } from "./flow-registry.js";
import type { LoginBrowser, LoginBrowserFactory } from "./ports.js";
import type { ClientMessage } from "./protocol.js";
import type { CaptureStrategy, Viewport } from "./strategies/strategy.js";
import { traceLogin } from "./trace.js";

/** What starting a flow's browser needs. */
export interface FlowBrowserDeps {
  readonly browsers: LoginBrowserFactory;
  readonly log: Logger;
  readonly outcomes: FlowOutcomes;
}

/** The viewer's input meant for the browser itself. */
export type BrowserInput = Extract<ClientMessage, { type: "mouse" | "wheel" | "key" | "text" }>;

/** The flow's one browser start; every failure is handled here (the flow fails, or a paste flow goes on without it). */
export async function launchFlowBrowser(
  d: FlowBrowserDeps,
  f: Flow,
  strategy: CaptureStrategy,
  viewport: Viewport,
): Promise<void> {
  try {
    if (strategy.browserSignsIn) f.send?.({ type: "status", state: "loading", message: "Opening the sign-in page…" });
    await strategy.start(f, viewport);
    if (strategy.browserSignsIn && !f.ended)
      f.send?.({ type: "status", state: "waiting", message: "Waiting for you to sign in." });
  } catch (err) {
    d.log.warn("login browser failed to start", { sessionId: f.session.id, error: errorMessage(err) });
    // The paste form works without its token page; a sign-in without its browser cannot.
    if (strategy.browserSignsIn)
      await d.outcomes.end(f, "failed", "The sign-in page could not be opened. Try again later.");
    else
      f.send?.({
        type: "status",
        state: "waiting",
        message: "The token page could not be shown here; open it in your own browser, then paste your token below.",
      });
  }
}

/** Starts Chromium for the flow on `startUrl` (FlowControl.startBrowser); a flow that ended meanwhile closes it. */
export async function startFlowBrowser(
  d: FlowBrowserDeps,
  f: Flow,
  startUrl: string,
  viewport: Viewport,
  intercept?: { prefix: string; onHit(url: string): void },
): Promise<void> {
  const allowed = f.service.entry.loginDomains.length ? f.service.entry.loginDomains : [new URL(startUrl).host];
  traceLogin("browser_requested", f.session.id);
  const browser = await d.browsers({
    startUrl,
    allowedHosts: allowed,
    viewport,
    onFrame: (fr) =>
      f.send?.({
        type: "frame",
        data: fr.data.toString("base64"),
        width: fr.width,
        height: fr.height,
        popup: fr.popup,
      }),
    onBlockedNavigation: (url) =>
      d.log.info("login navigation blocked", { sessionId: f.session.id, host: safeHost(url) }),
    ...(intercept ? { intercept } : {}),
  });
  // The flow ended while Chromium started: this browser dies here, with it.
  if (f.ended) await d.outcomes.closeBrowser(browser);
  else f.browser = browser;
}

/** Forwards one input of the viewer to the flow's browser, if it has one. */
export function forwardToBrowser(b: LoginBrowser | undefined, m: BrowserInput): Promise<void> | undefined {
  switch (m.type) {
    case "mouse":
      return b?.mouse({
        type: m.kind,
        x: m.x,
        y: m.y,
        ...(m.button ? { button: m.button } : {}),
        ...(m.clickCount ? { clickCount: m.clickCount } : {}),
      });
    case "wheel":
      return b?.wheel({ x: m.x, y: m.y, deltaX: m.deltaX, deltaY: m.deltaY });
    case "key":
      return b?.key({ type: m.kind, key: m.key });
    case "text":
      return b?.text(m.text);
  }
}

function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "(invalid)";
  }
}
