// Redirect hops of a confined page, seen on a CDP session of our own. Playwright's route does not
// see redirect hops, and its `request` event for a hop is lost now and then when the hop fails in
// the network stack before Playwright has paired it with its interception (under CPU load about one
// hop in eight was never reported). Chromium's own `Network.requestWillBeSent` with a
// `redirectResponse` is emitted for every hop, before the network stack refuses it.
import type { BrowserContext, CDPSession, Page } from "playwright-core";

/** How many distinct hop URLs a browser remembers for de-duplication; a login needs a handful. */
const SEEN_LIMIT = 1_000;

/**
 * Reports each redirect hop once, whichever source (our CDP session or Playwright's `request`
 * event) sees it first. Bounded: past SEEN_LIMIT the oldest URLs are forgotten.
 */
export class HopReporter {
  private readonly seen = new Set<string>();

  constructor(private readonly onHop: (url: string) => void) {}

  /** A hop to `url` happened; reported unless this URL was already reported. */
  hop(url: string): void {
    if (this.seen.has(url)) return;
    this.seen.add(url);
    if (this.seen.size > SEEN_LIMIT) {
      const oldest = this.seen.values().next();
      if (!oldest.done) this.seen.delete(oldest.value);
    }
    this.onHop(url);
  }
}

/**
 * Opens a CDP session on `page` that reports every redirect hop's target URL to `reporter`.
 * Resolves once the page's network events are flowing; the session lives as long as the page.
 */
export async function watchRedirectHops(ctx: BrowserContext, page: Page, reporter: HopReporter): Promise<CDPSession> {
  const cdp = await ctx.newCDPSession(page);
  cdp.on("Network.requestWillBeSent", (e) => {
    if (e.redirectResponse) reporter.hop(e.request.url);
  });
  // No response bodies are ever read through this session: keep its buffers empty.
  await cdp.send("Network.enable", { maxTotalBufferSize: 0, maxResourceBufferSize: 0, maxPostDataSize: 0 });
  return cdp;
}
