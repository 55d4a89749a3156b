import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { expect } from "vitest";

// What the console live test does at a person's page: open it as someone, switch tabs, read a
// service's standing and the Inbox badge, run a tool, and check what a person sees (in the
// viewport, no Slack markup, nothing scrolling sideways).

/** How long a page may take to follow what someone else did. */
export const WAIT = 45_000;
const SLACK_MARKUP = /<[@#!][A-Za-z0-9^|._-]*>/;

export const visible = (l: Locator) => l.waitFor({ state: "visible", timeout: WAIT });

export interface Person {
  readonly page: Page;
  readonly context: BrowserContext;
  readonly errors: string[];
}

/** One person at a page of the console at `url`, acting as `name`, once the page is live. */
export async function open(
  browser: Browser,
  url: string,
  name: string,
  viewport: { width: number; height: number },
): Promise<Person> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(url);
  await visible(page.getByRole("status").filter({ hasText: /^Live$/ }));
  await page.getByLabel("Acting as").selectOption({ label: name });
  await page
    .getByText(new RegExp(`calls run as ${name.replace(/ \(admin\)$/, "")}\\.`))
    .waitFor({ state: "attached", timeout: WAIT });
  return { page, context, errors };
}

export const tab = (p: Page, name: RegExp) => p.getByRole("tab", { name }).click();

/** The Services panel's row of the demo service once it says `standing`. */
export async function demoStanding(p: Page, standing: string): Promise<Locator> {
  const row = p.locator('#services li[data-service="demo"]');
  await expect.poll(() => row.getAttribute("data-standing"), { timeout: WAIT }).toBe(standing);
  return row;
}

/** The Inbox badge of the person acting ("" when nothing waits for them). */
export const badge = (p: Page) => p.locator("#inbox-count").textContent();

/** Asserts `l` is (at least partly) inside the page's viewport: feedback the person sees where they act. */
export async function inViewport(p: Page, l: Locator): Promise<void> {
  await visible(l);
  const box = await l.boundingBox();
  const v = p.viewportSize()!;
  expect(box, "feedback has a box").not.toBeNull();
  expect(
    box!.y < v.height && box!.y + box!.height > 0 && box!.x < v.width && box!.x + box!.width > 0,
    `in the ${v.width}×${v.height} viewport`,
  ).toBe(true);
}

export async function noSlackMarkup(p: Page): Promise<void> {
  // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText is the text a person sees; textContent would include hidden text
  expect(await p.locator("body").innerText()).not.toMatch(SLACK_MARKUP);
}

export async function noSidewaysScroll(p: Page): Promise<void> {
  expect(
    await p.evaluate(() => {
      const root = (
        globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }
      ).document.documentElement;
      return root.scrollWidth - root.clientWidth;
    }),
  ).toBeLessThanOrEqual(0);
}

export async function useTool(p: Page, query: string, tool: string): Promise<void> {
  await tab(p, /^Play a thread/);
  await p.getByRole("searchbox", { name: "Search" }).fill(query);
  await p.getByRole("button", { name: "Search tools" }).click();
  await p.getByRole("button", { name: `Use ${tool}` }).click();
  await visible(p.getByRole("button", { name: `Run ${tool}` }));
}

/** The newest run of `who` calling `label`, once it answered. */
export async function finishedRun(p: Page, who: string, label: string): Promise<Locator> {
  const run = p.getByRole("article", { name: new RegExp(`^Run \\d+: ${who} · ${label}$`) }).first();
  await visible(run);
  await expect.poll(() => run.getAttribute("data-state"), { timeout: WAIT }).not.toBe("running");
  return run;
}
