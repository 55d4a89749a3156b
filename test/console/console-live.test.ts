import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium } from "playwright-core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  badge,
  demoStanding,
  finishedRun,
  inViewport,
  noSidewaysScroll,
  noSlackMarkup,
  open,
  tab,
  useTool,
  visible,
  WAIT,
} from "./live-page.js";
import { ARTIFACTS, CHROMIUM, CHROMIUM_FLAGS, type ServeProcess, startServe } from "./serve.js";

// Three people at three open pages of one console (a server started as `npm start` starts it),
// at 1280×800 and at 390×844: every panel follows what the others do without a reload (a connect,
// a decision, a revoke), cards settle and leave the badge of the person acting, the Services panel
// says what the next call answers (Carol revokes Alice's thread connection: the panel says needs
// connect and the call answers needs_connect), the JSON arguments replace the form, every action
// answers within the viewport, no Slack markup is ever visible and nothing scrolls sideways.

const IMAGES = fileURLToPath(new URL("../../docs/images/", import.meta.url));

let dir: string;
let server: ServeProcess;
let browser: Browser;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  mkdirSync(IMAGES, { recursive: true });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
}, 120_000);

afterAll(async () => {
  await browser?.close();
});

// Each viewport plays the story on its own server: a story that stops half way (Alice's thread
// connection still live) cannot leave a second connection in the next one's lists.
beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-console-live-"));
  server = await startServe(dir);
}, 120_000);

afterEach(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function story(viewport: { width: number; height: number }): Promise<void> {
  const size = `${viewport.width}x${viewport.height}`;
  const alice = await open(browser, server.consoleUrl, "Alice", viewport);
  const bob = await open(browser, server.consoleUrl, "Bob", viewport);
  const carol = await open(browser, server.consoleUrl, "Carol (admin)", viewport);
  const everyone = [alice, bob, carol];

  // --- Alice starts a thread; Bob follows it. Nothing is connected there: both panels say so.
  await alice.page.getByRole("button", { name: "Start a new thread" }).click();
  await inViewport(
    alice.page,
    alice.page.getByRole("alert").filter({ hasText: "Alice started a thread in #general." }),
  );
  await demoStanding(alice.page, "needs_connect");
  await expect
    .poll(() => bob.page.getByRole("combobox", { name: "Thread" }).locator("option").count(), { timeout: WAIT })
    .toBeGreaterThan(0);
  await bob.page.getByRole("combobox", { name: "Thread" }).selectOption({ index: 0 });
  await demoStanding(bob.page, "needs_connect");
  // The tools of the first service are listed on first load, not an empty box.
  await visible(alice.page.getByRole("button", { name: "Use list_notes" }));

  // --- Alice connects: the consent card, its sign-in page, then every page follows without a reload.
  const connectRow = await demoStanding(alice.page, "needs_connect");
  await connectRow.getByRole("button", { name: "Connect Demo notes" }).click();
  const connectRun = await finishedRun(alice.page, "Alice", "connect demo");
  await inViewport(alice.page, connectRun.getByRole("status"));
  await visible(connectRun.getByText("I've sent @Alice a private card to connect demo.", { exact: false }));
  // The broker's sentence once (not again as the raw text beside it).
  expect(await connectRun.locator("p.message, pre.text").filter({ hasText: "I've sent" }).count()).toBe(1);
  await noSlackMarkup(alice.page);
  await expect.poll(() => badge(alice.page), { timeout: WAIT }).toBe("1");
  await tab(alice.page, /^Inbox/);
  const consent = alice.page
    .getByRole("article")
    .filter({ has: alice.page.getByRole("button", { name: "Continue" }) })
    .first();
  await visible(consent);
  // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText is the text a person sees; textContent would include hidden text
  expect(await consent.innerText()).not.toContain("/connections");
  const [login] = await Promise.all([
    alice.context.waitForEvent("page", { timeout: WAIT }),
    consent.getByRole("button", { name: "Continue" }).click(),
  ]);
  await login.waitForURL(/\/login\/l\//, { timeout: WAIT });
  await login.getByLabel("Demo token").fill("demo-alice-a1b2c3d4");
  await login.getByRole("button", { name: "Save" }).click();
  await expect.poll(() => login.getByRole("status").getAttribute("data-state"), { timeout: WAIT }).toBe("captured");
  await login.close();
  // The used consent card settles and leaves the badge; no card offers a control that is not here.
  await visible(alice.page.getByRole("heading", { name: "Demo notes connected" }).first());
  await expect.poll(() => alice.page.locator('#inbox article[data-state="open"]').count(), { timeout: WAIT }).toBe(0);
  await expect.poll(() => badge(alice.page), { timeout: WAIT }).toBe("");
  // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText is the text a person sees; textContent would include hidden text
  expect(await alice.page.locator("#inbox").innerText()).not.toMatch(/\/connect\b|\/connections\b/);
  await tab(alice.page, /^Play a thread/);
  const own = await demoStanding(alice.page, "own");
  expect(await own.getByRole("button", { name: /Connect/ }).count()).toBe(0);
  await demoStanding(bob.page, "needs_approval");
  await tab(carol.page, /^Connections/);
  await visible(carol.page.getByRole("button", { name: "Revoke Alice's demo connection" }));

  // --- Bob borrows: his run shows the wait and its time left; Alice's decision in her page ends it.
  await useTool(bob.page, "notes", "list_notes");
  await bob.page.getByRole("button", { name: "Run list_notes" }).click();
  const wait = bob.page.getByText(/^Waiting for Alice to approve list_notes: \d+:\d\d left\.$/);
  await inViewport(bob.page, wait);
  await expect.poll(() => badge(alice.page), { timeout: WAIT }).toBe("1");
  await tab(alice.page, /^Inbox/);
  const ask = alice.page
    .getByRole("article")
    .filter({ has: alice.page.getByRole("button", { name: "Allow for thread" }) })
    .first();
  await visible(ask);
  await noSlackMarkup(alice.page);
  await alice.page.screenshot({ path: path.join(ARTIFACTS, `inbox-${size}.png`) });
  await ask.getByRole("button", { name: "Allow for thread" }).click();
  // The card settles where it was, with the outcome of the click beside it.
  const settled = alice.page
    .getByRole("article")
    .filter({ has: alice.page.getByRole("heading", { name: "Request allowed for this thread" }) })
    .first();
  await inViewport(alice.page, settled);
  await visible(settled.getByRole("status").filter({ hasText: "Alice answered: Allow for thread." }));
  await expect.poll(() => badge(alice.page), { timeout: WAIT }).toBe("");
  const borrowed = await finishedRun(bob.page, "Bob", "demo · list_notes");
  expect(await borrowed.getAttribute("data-state")).toBe("ok");
  await inViewport(bob.page, borrowed.getByText("Ran on Alice's account (Alice allowed it for this thread)"));
  await demoStanding(bob.page, "grant");
  await noSlackMarkup(bob.page);
  if (viewport.width === 1280) {
    // The README's picture: the top of Bob's page (thread, what each call gets, the tools).
    await bob.page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
    await bob.page.screenshot({ path: path.join(IMAGES, "console-1280x800.png") });
  }

  // --- Bob writes through the JSON editor, which replaces the form: a bad object is refused beside it.
  await useTool(bob.page, "note", "add_note");
  await bob.page.getByRole("checkbox", { name: "Edit arguments as JSON" }).check();
  expect(await bob.page.getByLabel("title (required)").isVisible()).toBe(false);
  const editor = bob.page.getByRole("textbox", { name: "Arguments (JSON)" });
  await editor.fill("{ title: Buy milk");
  await bob.page.getByRole("button", { name: "Run add_note" }).click();
  await inViewport(bob.page, bob.page.getByText(/^Not valid JSON/));
  expect(await editor.getAttribute("aria-invalid")).toBe("true");
  await editor.fill('{ "title": "Buy milk" }');
  await bob.page.getByRole("button", { name: "Run add_note" }).click();
  await visible(bob.page.getByText(/^Waiting for Alice to approve add_note/));
  await expect.poll(() => badge(alice.page), { timeout: WAIT }).toBe("1");
  const once = alice.page
    .getByRole("article")
    .filter({ hasText: "add_note" })
    .filter({ has: alice.page.getByRole("button", { name: "Just once" }) })
    .first();
  await once.getByRole("button", { name: "Just once" }).click();
  const wrote = await finishedRun(bob.page, "Bob", "demo · add_note");
  expect(await wrote.getAttribute("data-state")).toBe("ok");
  await visible(wrote.getByText("Ran on Alice's account (Alice allowed it once)"));
  await expect.poll(() => badge(alice.page), { timeout: WAIT }).toBe("");

  // --- Carol revokes Alice's thread connection, confirming what she revokes.
  const revoke = carol.page.getByRole("button", { name: "Revoke Alice's demo connection" });
  await revoke.click();
  const confirm = carol.page.getByRole("group", {
    name: /^Revoke Alice's demo connection for the thread in #general\?/,
  });
  await inViewport(carol.page, confirm);
  await confirm.getByRole("button", { name: "Yes, revoke" }).click();
  await inViewport(
    carol.page,
    carol.page.getByRole("status").filter({ hasText: /^Revoked Alice's demo connection for the thread in #general\./ }),
  );
  // Every open page follows: the panel says needs connect, and Alice's next call answers needs_connect.
  await tab(alice.page, /^Play a thread/);
  await demoStanding(alice.page, "needs_connect");
  await demoStanding(bob.page, "needs_connect");
  await tab(alice.page, /^Connections/);
  await visible(alice.page.getByText("No connections yet: connect a service from Play a thread."));
  await useTool(alice.page, "notes", "list_notes");
  await alice.page.getByRole("button", { name: "Run list_notes" }).click();
  const refused = await finishedRun(alice.page, "Alice", "demo · list_notes");
  expect(await refused.getAttribute("data-code")).toBe("needs_connect");
  await inViewport(alice.page, refused.getByRole("status"));
  // Alice's notice tells her what works here (the console's control, not a Slack command).
  await tab(alice.page, /^Inbox/);
  const notice = alice.page
    .getByRole("article")
    .filter({ has: alice.page.getByRole("heading", { name: "demo connection revoked" }) })
    .first();
  await visible(notice.getByText(/Connect again with the Connect button of Play a thread/));
  await tab(alice.page, /^Play a thread/);

  // --- The audit names no code twice; the thread's runs outlive a reload.
  await tab(carol.page, /^Audit/);
  const audit = carol.page.getByRole("table", { name: /Audit log/ });
  await visible(audit.getByRole("cell", { name: "connection_revoked", exact: true }).first());
  // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText is the text a person sees; textContent would include hidden text
  expect(await audit.innerText()).not.toMatch(/needs_connect,? needs_connect/);
  await bob.page.reload();
  await visible(bob.page.getByRole("status").filter({ hasText: /^Live$/ }));
  await bob.page.getByLabel("Acting as").selectOption({ label: "Bob" });
  await bob.page.getByRole("combobox", { name: "Thread" }).selectOption({ index: 0 });
  await visible(
    bob.page.locator("#history li", { hasText: "Bob · demo · list_notes: ran on Alice's account" }).first(),
  );

  // --- Every panel of every page: no Slack markup, nothing sideways; at phone width every tab reachable.
  for (const p of everyone.map((x) => x.page)) {
    for (const name of [/^Play a thread/, /^Inbox/, /^Connections/, /^Workspace/, /^Audit/]) {
      const t = p.getByRole("tab", { name });
      const box = await t.boundingBox();
      expect(box && box.x >= 0 && box.x + box.width <= viewport.width, `tab ${name} on screen`).toBe(true);
      await t.click();
      await noSlackMarkup(p);
      await noSidewaysScroll(p);
    }
  }
  if (viewport.width < 500) {
    // The audit's Decision is on screen in a stacked row.
    const cell = audit.getByRole("cell").filter({ hasText: "allowed_once" }).first();
    await cell.scrollIntoViewIfNeeded();
    const box = await cell.boundingBox();
    expect(box!.x + box!.width).toBeLessThanOrEqual(viewport.width);
    await carol.page.screenshot({ path: path.join(ARTIFACTS, `audit-${size}.png`) });
    await tab(bob.page, /^Play a thread/);
    await bob.page.evaluate(() => (globalThis as unknown as { scrollTo(x: number, y: number): void }).scrollTo(0, 0));
    await bob.page.screenshot({ path: path.join(IMAGES, "console-390x844.png") });
  }
  for (const x of everyone) {
    await x.page.screenshot({
      path: path.join(
        ARTIFACTS,
        `end-${size}-${(await x.page.getByLabel("Acting as").inputValue()).toLowerCase()}.png`,
      ),
    });
    expect(x.errors).toEqual([]);
    await x.context.close();
  }
}

describe("the console is live, says what calls answer, and works on a phone", () => {
  it("at 1280×800", () => story({ width: 1280, height: 800 }), 300_000);
  it("at 390×844", () => story({ width: 390, height: 844 }), 300_000);
});
