import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type Browser, chromium, type Locator, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ARTIFACTS, CHROMIUM, CHROMIUM_FLAGS, type ServeProcess, startServe } from "./serve.js";

// The acceptance story of issue 10, in a real browser against a real server process started the
// way `npm start` starts it (no Slack, no services.json, no host tokens, a fresh data directory):
// Alice connects the demo service through the consent card and the live-view page, runs whoami;
// Bob borrows in Alice's thread (Allow for thread, then Just once for a write); Bob's click on
// Alice's card is refused; Carol, an admin, revokes Alice's connection and Bob's next call
// answers needs_connect; the audit tail shows each step. Locators are role-based.

const WAIT = 45_000;

let dir: string;
let server: ServeProcess;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-console-story-"));
  server = await startServe(dir);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const visible = (l: Locator) => l.waitFor({ state: "visible", timeout: WAIT });

async function actAs(name: string): Promise<void> {
  await page.getByLabel("Acting as").selectOption({ label: name });
  // The panels reload for the new person; the play panel says who calls run as.
  await page
    .getByText(new RegExp(`calls run as ${name.replace(/ \(admin\)$/, "")}\\.`))
    .waitFor({ state: "attached", timeout: WAIT });
}

async function openTab(name: RegExp): Promise<void> {
  await page.getByRole("tab", { name }).click();
}

/** The newest run of `who` calling `label`, once it has answered. */
async function finishedRun(who: string, label: string): Promise<Locator> {
  const run = page.getByRole("article", { name: new RegExp(`^Run \\d+: ${who} · ${label}$`) }).first();
  await visible(run);
  await expect.poll(() => run.getAttribute("data-state"), { timeout: WAIT }).not.toBe("running");
  return run;
}

async function useTool(query: string, tool: string): Promise<void> {
  await openTab(/^Play a thread/);
  await page.getByRole("combobox", { name: "Service" }).selectOption({ label: "Demo notes" });
  await page.getByRole("searchbox", { name: "Search" }).fill(query);
  await page.getByRole("button", { name: "Search tools" }).click();
  await page.getByRole("button", { name: `Use ${tool}` }).click();
  await visible(page.getByRole("button", { name: `Run ${tool}` }));
}

describe("the console, as a new user meets it", () => {
  it("plays the whole story: connect, borrow with Allow for thread and Just once, a refused click, an admin revoke, the audit tail", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    // Clicks, fills and waits without their own timeout get the same load margin (playwright's is 30 s).
    context.setDefaultTimeout(WAIT);
    page = await context.newPage();
    await page.goto(server.consoleUrl);
    // The token is exchanged for a cookie and dropped from the address bar.
    expect(new URL(page.url()).search).toBe("");
    await visible(page.getByRole("status").filter({ hasText: /^Live$/ }));

    // --- Alice starts a thread and connects the demo service: consent card → live view → paste → saved.
    await actAs("Alice");
    await page.getByRole("button", { name: "Start a new thread" }).click();
    await visible(page.getByText(/^Thread in #general; calls run as Alice\.$/));
    expect(await page.getByRole("combobox", { name: "Thread" }).locator("option:checked").textContent()).toMatch(
      /^Alice's thread/,
    );
    await page.getByRole("button", { name: "Connect Demo notes" }).click();
    await finishedRun("Alice", "connect demo");
    await openTab(/^Inbox/);
    const consent = page
      .getByRole("article")
      .filter({ has: page.getByRole("button", { name: "Continue" }) })
      .first();
    await visible(consent);
    const [login] = await Promise.all([
      context.waitForEvent("page", { timeout: WAIT }),
      consent.getByRole("button", { name: "Continue" }).click(),
    ]);
    await login.waitForURL(/\/login\/l\//, { timeout: WAIT });
    await login.getByLabel("Demo token").fill("demo-alice-a1b2c3d4");
    await login.getByRole("button", { name: "Save" }).click();
    await expect.poll(() => login.getByRole("status").getAttribute("data-state"), { timeout: WAIT }).toBe("captured");
    await login.close();
    await visible(page.getByRole("heading", { name: "Demo notes connected" }).first());

    // --- Alice runs whoami and sees herself.
    await useTool("who", "whoami");
    await page.getByRole("button", { name: "Run whoami" }).click();
    const whoami = await finishedRun("Alice", "demo · whoami");
    await expect.poll(() => whoami.getAttribute("data-state")).toBe("ok");
    expect(await whoami.getByText("Ran on your own account").count()).toBe(1);
    expect(await whoami.locator("pre").first().textContent()).toContain('"account":"alice"');

    // --- Bob, in Alice's thread, runs list_notes; Alice's inbox shows the card; Allow for thread.
    await actAs("Bob");
    await useTool("notes", "list_notes");
    await page.getByRole("button", { name: "Run list_notes" }).click();
    await visible(page.getByRole("article", { name: /^Run \d+: Bob · demo · list_notes$/ }).first());
    await actAs("Alice");
    await openTab(/^Inbox/);
    const ask = page
      .getByRole("article")
      .filter({ has: page.getByRole("button", { name: "Allow for thread" }) })
      .first();
    await visible(ask);
    expect(await ask.getByText("list_notes", { exact: true }).count()).toBeGreaterThan(0);
    await page.screenshot({ path: path.join(ARTIFACTS, "console-inbox-1280x800.png") });
    await ask.getByRole("button", { name: "Allow for thread" }).click();
    await openTab(/^Play a thread/);
    const borrowed = await finishedRun("Bob", "demo · list_notes");
    expect(await borrowed.getAttribute("data-state")).toBe("ok");
    await visible(borrowed.getByText(/^Ran on Alice's account \(Alice allowed it for this thread\)$/));

    // --- Bob's add_note (a write) asks again; Bob's own click on Alice's card is refused; Alice's Just once runs it once.
    await actAs("Bob");
    await useTool("note", "add_note");
    await page.getByLabel("title (required)").fill("Buy milk");
    await page.getByRole("button", { name: "Run add_note" }).click();
    await openTab(/^Inbox/);
    await page.getByLabel("Inbox of").selectOption({ label: "Alice" });
    const writeAsk = page
      .getByRole("article")
      .filter({ hasText: "add_note" })
      .filter({ has: page.getByRole("button", { name: "Just once" }) })
      .first();
    await visible(writeAsk);
    expect(await writeAsk.getByRole("button", { name: "Allow for thread" }).count()).toBe(0);
    await writeAsk.getByRole("button", { name: "Just once" }).click();
    await visible(
      writeAsk.getByRole("status").filter({ hasText: "Only the owner of this account can answer this request." }),
    );
    await actAs("Alice");
    await openTab(/^Inbox/);
    await page
      .getByRole("article")
      .filter({ hasText: "add_note" })
      .filter({ has: page.getByRole("button", { name: "Just once" }) })
      .first()
      .getByRole("button", { name: "Just once" })
      .click();
    await openTab(/^Play a thread/);
    const once = await finishedRun("Bob", "demo · add_note");
    expect(await once.getAttribute("data-state")).toBe("ok");
    await visible(once.getByText(/^Ran on Alice's account \(Alice allowed it once\)$/));
    await actAs("Bob");
    await useTool("notes", "list_notes");
    await page.getByRole("button", { name: "Run list_notes" }).click();
    const after = await finishedRun("Bob", "demo · list_notes");
    const notesText = (await after.locator("pre").first().textContent()) ?? "";
    expect(notesText.split("Buy milk").length - 1).toBe(1);

    // --- Carol (admin) revokes Alice's connection; Bob's next call answers needs_connect.
    await actAs("Carol (admin)");
    await openTab(/^Connections/);
    await page.getByRole("button", { name: "Revoke Alice's demo connection" }).click();
    await page.getByRole("button", { name: "Yes, revoke" }).click();
    await visible(
      page.getByRole("alert").filter({ hasText: /^Revoked Alice's demo connection for the thread in #general\./ }),
    );
    await actAs("Bob");
    await useTool("notes", "list_notes");
    await page.getByRole("button", { name: "Run list_notes" }).click();
    const refused = await finishedRun("Bob", "demo · list_notes");
    expect(await refused.getAttribute("data-state")).toBe("refused");
    await visible(refused.getByRole("status").filter({ hasText: "Not run: needs_connect" }));

    // --- The audit tail shows each step.
    await openTab(/^Audit/);
    const audit = page.getByRole("table", { name: /Audit log/ });
    for (const event of [
      "login_completed",
      "call",
      "approval_requested",
      "approval_decided",
      "grant_created",
      "approval_rejected_click",
      "admin_action",
      "connection_revoked",
    ]) {
      await visible(audit.getByRole("cell", { name: event, exact: true }).first());
    }
    await visible(
      audit.getByRole("row").filter({ hasText: "approval_decided" }).filter({ hasText: "allowed_once" }).first(),
    );
    await visible(
      audit
        .getByRole("row")
        .filter({ hasText: "approval_rejected_click" })
        .filter({ hasText: "clicked by Bob" })
        .first(),
    );

    // Every control on every panel has an accessible name (an unnamed one shows as a bare role).
    for (const tab of [/^Play a thread/, /^Inbox/, /^Connections/, /^Workspace/, /^Audit/]) {
      await openTab(tab);
      const snapshot = await page.locator("body").ariaSnapshot();
      expect(snapshot).not.toMatch(
        /- (button|combobox|textbox|searchbox|checkbox|link|tab|option)( \[[^\]]*\])?(:|$)/m,
      );
    }

    // Phone width: the same page, readable at 390 px (once the last notice has cleared).
    await openTab(/^Play a thread/);
    await page.getByRole("alert").filter({ hasText: /./ }).waitFor({ state: "hidden", timeout: WAIT });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: path.join(ARTIFACTS, "console-play-390x844.png"), fullPage: false });
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.screenshot({ path: path.join(ARTIFACTS, "console-play-1280x800.png") });
    await context.close();
  }, 300_000);
});

mkdirSync(ARTIFACTS, { recursive: true });
