// The fake IdP's pages, driven the two ways login tests use them: plain HTTP, and a real Chromium
// clicking the documented coordinates (as the live view relays a user's clicks).
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type Box,
  centerOf,
  type FakeIdp,
  LOGIN_LAYOUT,
  SESSION_COOKIE,
  SSO_LAYOUT,
  startFakeIdp,
  TOKENS_LAYOUT,
} from "../../fixtures/idp/fake-idp.js";

const CHROMIUM = process.env.SLAUDE_CHROMIUM_PATH ?? "/usr/bin/chromium";

let idp: FakeIdp | undefined;
afterEach(async () => {
  await idp?.close();
  idp = undefined;
});

describe("fake IdP over HTTP", () => {
  it("signs in through the form, sets the session cookie and shows the API token", async () => {
    idp = await startFakeIdp({ users: { carol: { password: "pw", token: "api-carol" } } });
    const bad = await fetch(`${idp.url}/login`, {
      method: "POST",
      body: new URLSearchParams({ username: "carol", password: "nope" }),
      redirect: "manual",
    });
    expect(bad.status).toBe(401);
    expect(bad.headers.getSetCookie()).toEqual([]);

    const ok = await fetch(`${idp.url}/login`, {
      method: "POST",
      body: new URLSearchParams({ username: "carol", password: "pw", next: "//evil.example/" }),
      redirect: "manual",
    });
    expect(ok.status).toBe(302);
    expect(ok.headers.get("location")).toBe("/home");
    const cookie = ok.headers.getSetCookie()[0]!.split(";")[0]!;
    expect(cookie.startsWith(`${SESSION_COOKIE}=`)).toBe(true);

    expect(await (await fetch(`${idp.url}/home`, { headers: { cookie } })).text()).toContain("Signed in as carol");
    expect(await (await fetch(idp.tokensUrl, { headers: { cookie } })).text()).toContain(
      '<code id="api-token">api-carol</code>',
    );
    const anonymous = await fetch(idp.tokensUrl, { redirect: "manual" });
    expect(anonymous.headers.get("location")).toBe("/login?next=/tokens");
  });

  it("guards the fake MCP endpoint with a 401 pointing at its resource metadata", async () => {
    idp = await startFakeIdp();
    const res = await fetch(idp.mcpUrl, { method: "POST" });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain(`resource_metadata="${idp.resourceMetadataUrl}"`);
  });
});

describe("fake IdP in a real Chromium, by coordinates", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  });
  afterAll(async () => {
    await browser?.close();
  });

  async function idAt(page: Page, box: Box): Promise<string | undefined> {
    const { x, y } = centerOf(box);
    // A string expression: the test tsconfig has no DOM types.
    return page.evaluate<string | undefined>(`document.elementFromPoint(${x}, ${y})?.id`);
  }

  async function fillLoginForm(page: Page, user: string, password: string): Promise<void> {
    const u = centerOf(LOGIN_LAYOUT.username);
    await page.mouse.click(u.x, u.y);
    await page.keyboard.type(user);
    const p = centerOf(LOGIN_LAYOUT.password);
    await page.mouse.click(p.x, p.y);
    await page.keyboard.type(password);
    const b = centerOf(LOGIN_LAYOUT.submit);
    await page.mouse.click(b.x, b.y);
  }

  it("puts the login fields and button where LOGIN_LAYOUT says, and clicking them signs in", async () => {
    idp = await startFakeIdp();
    const context = await browser.newContext({ viewport: { width: 800, height: 600 } });
    const page = await context.newPage();
    await page.goto(`${idp.url}/login`);
    expect(await idAt(page, LOGIN_LAYOUT.username)).toBe("username");
    expect(await idAt(page, LOGIN_LAYOUT.password)).toBe("password");
    expect(await idAt(page, LOGIN_LAYOUT.submit)).toBe("submit");
    await fillLoginForm(page, "alice", "alice-password");
    await page.waitForURL(`${idp.url}/home`);
    expect((await context.cookies()).some((c) => c.name === SESSION_COOKIE)).toBe(true);

    await page.goto(idp.tokensUrl);
    expect(await idAt(page, TOKENS_LAYOUT.token)).toBe("api-token");
    await context.close();
  });

  it("signs in through the SSO popup, which sends its opener home and closes", async () => {
    idp = await startFakeIdp();
    const context = await browser.newContext({ viewport: { width: 800, height: 600 } });
    const page = await context.newPage();
    await page.goto(idp.ssoUrl);
    expect(await idAt(page, SSO_LAYOUT.button)).toBe("sso");
    const b = centerOf(SSO_LAYOUT.button);
    const [popup] = await Promise.all([page.waitForEvent("popup"), page.mouse.click(b.x, b.y)]);
    await popup.waitForLoadState();
    expect(new URL(popup.url()).pathname).toBe("/sso/popup");
    await popup.setViewportSize({ width: 520, height: 400 });
    await Promise.all([popup.waitForEvent("close"), fillLoginForm(popup, "bob", "bob-password")]);
    await page.waitForURL(`${idp.url}/home`);
    expect(await page.textContent("#signed-in")).toBe("Signed in as bob");
    await context.close();
  });
});
