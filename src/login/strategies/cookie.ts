// The cookie strategy: the user signs in inside the confined browser; the flow completes once
// every required cookie of the allowed hosts exists (polled, or checked when the user says Done).
import type { Service } from "../../config/registry.js";
import type { CredentialInput } from "../../vault/credential.js";
import type { Flow } from "../flow-registry.js";
import type { LoginBrowser } from "../ports.js";
import type { CaptureStrategy, FlowControl, Viewport } from "./strategy.js";

type BrowserCookie = Awaited<ReturnType<LoginBrowser["cookies"]>>[number];

/** How often the browser's cookies are checked for the required ones. */
export const COOKIE_POLL_MS = 500;

/** The cookie credential once every required cookie exists, else undefined (not signed in yet). */
export function cookieCredential(service: Service, cookies: readonly BrowserCookie[]): CredentialInput | undefined {
  const capture = service.entry.capture;
  if (capture.strategy !== "cookie") return undefined;
  const names = new Set(cookies.map((c) => c.name));
  if (!capture.requiredCookies.every((n) => names.has(n))) return undefined;
  return {
    kind: "cookies",
    cookies: cookies.map((c) => ({
      name: c.name,
      value: c.value,
      domain: c.domain,
      path: c.path,
      ...(c.expires !== undefined && c.expires > 0 ? { expires: c.expires } : {}),
      ...(c.httpOnly !== undefined ? { httpOnly: c.httpOnly } : {}),
      ...(c.secure !== undefined ? { secure: c.secure } : {}),
      ...(c.sameSite ? { sameSite: c.sameSite } : {}),
    })),
  };
}

/** Captures a browser session's cookies once the user has signed in. */
export class CookieStrategy implements CaptureStrategy {
  readonly browserSignsIn = true;

  constructor(private readonly run: FlowControl) {}

  greet(): void {}

  async start(f: Flow, viewport: Viewport): Promise<void> {
    const capture = f.service.entry.capture;
    if (capture.strategy !== "cookie") return;
    await this.run.startBrowser(f, capture.startUrl, viewport);
    // A flow that ended while Chromium started has no browser to poll (and nobody to stop the poll).
    if (f.ended) return;
    f.poll = this.run.clock.setInterval(
      () => this.run.background("cookie check", this.check(f, false)),
      COOKIE_POLL_MS,
      { unref: true },
    );
  }

  async paste(): Promise<void> {}

  done(f: Flow): Promise<void> {
    return this.check(f, true);
  }

  private async check(f: Flow, userSaidDone: boolean): Promise<void> {
    if (!f.browser || f.ended) return;
    const credential = cookieCredential(f.service, await f.browser.cookies().catch(() => []));
    if (credential) await this.run.complete(f, credential);
    else if (userSaidDone)
      f.send?.({ type: "status", state: "waiting", message: "Not signed in yet: finish signing in, then press Done." });
  }
}
