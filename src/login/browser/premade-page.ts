// A spare's pre-made page: making a browser context and its first page costs a spare login about
// 250 ms (most of it Chromium starting the page's renderer), so a spare makes them ahead of time
// when it knows the login it will serve (the registry names one browser login; see
// registry-hosts.ts). The context is made exactly as a login's own (contextOptions: the context
// proxy of that login's allowlist, incognito-like, no downloads, no service workers) and its page
// stays on about:blank: nothing loads in it until the login that takes the spare has installed the
// request route, redirect-hop watch and page guards (confinement.ts) and navigates. It is handed
// out with its spare, once; a login whose context proxy would differ closes it and makes its own.
import type { Browser, BrowserContext, Page } from "playwright-core";
import { contextOptions, contextProxy } from "./confinement.js";
import { HostAllowlist } from "./host-allowlist.js";

/** The viewport a page is pre-made with; a login asking another gets it set before it navigates. */
export const PREMADE_VIEWPORT = { width: 1024, height: 768 } as const;

/** A context and its first page, made on a spare for the allowlist whose context proxy bypass is `proxyBypass`. */
export interface PremadePage {
  readonly proxyBypass: string;
  readonly ctx: BrowserContext;
  readonly main: Page;
}

/** Makes a context confined to `patterns` in the network stack, and its first page (about:blank). */
export async function premakePage(browser: Browser, patterns: readonly string[]): Promise<PremadePage> {
  const allow = HostAllowlist.parse(patterns);
  const ctx = await browser.newContext(contextOptions(allow, { ...PREMADE_VIEWPORT }));
  try {
    return { proxyBypass: contextProxy(allow).bypass, ctx, main: await ctx.newPage() };
  } catch (err) {
    await ctx.close().catch(() => {});
    throw err;
  }
}

/**
 * The pre-made page for a login confined to `allow`, sized to `viewport`; undefined (and the
 * pre-made context closed) when it was made for another allowlist or has gone away.
 */
export async function usePremade(
  p: PremadePage | undefined,
  allow: HostAllowlist,
  viewport: { width: number; height: number },
): Promise<{ ctx: BrowserContext; main: Page } | undefined> {
  if (!p) return undefined;
  if (p.proxyBypass !== contextProxy(allow).bypass || p.main.isClosed() || p.main.url() !== "about:blank") {
    await p.ctx.close().catch(() => {});
    return undefined;
  }
  if (viewport.width !== PREMADE_VIEWPORT.width || viewport.height !== PREMADE_VIEWPORT.height)
    await p.main.setViewportSize(viewport);
  return p;
}
