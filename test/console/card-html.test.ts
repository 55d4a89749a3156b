import { readFileSync } from "node:fs";
import path from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApprovalCard, cardFacts as approvalArgFacts } from "../../src/approvals/card.js";
import { approvalCard } from "../../src/cards/approval-cards.js";
import { connectionReadyCard, consentCard, revokedCard } from "../../src/cards/notice-cards.js";
import { parseRegistry } from "../../src/config/registry.js";
import { CONSOLE_STATIC_DIR } from "../../src/console/static-files.js";
import { type Card, type CardFactList, cardFactList } from "../../src/domain/card.js";
import { Redactor } from "../../src/hygiene/redact.js";
import { approvalCardBlocks } from "../../src/slack/approval-blocks.js";
import type { Approval, Connection } from "../../src/store/records.js";
import { argumentsShown } from "../fixtures/slack/block-text.js";
import { CHROMIUM, CHROMIUM_FLAGS } from "./serve.js";

// One card, two renderers: the same Card JSON rendered to Block Kit by the Slack renderer and to
// HTML by the console's own cards.js in Chromium. The HTML shows exactly the card's facts (title,
// lines, tool, every argument name and value, notice, footer, buttons), and the arguments and
// buttons are the ones Slack shows. (The Slack half against the facts is test/cards/slack-facts.)

const ORIGIN = "http://console.test";
let browser: Browser;
let page: Page;

beforeAll(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS });
  page = await browser.newPage();
  // The console's real static files, served by name from static/console.
  await page.route(`${ORIGIN}/**`, (route) => {
    const name = new URL(route.request().url()).pathname.replace(/^\/console\//, "");
    // A page that loads cards.js as the console does (a module) and exposes its renderer to the test.
    if (name === "blank")
      return route.fulfill({
        contentType: "text/html",
        body: '<!doctype html><title>cards</title><script type="module">import { renderCard } from "/console/cards.js"; window.renderCard = renderCard;</script><body></body>',
      });
    return route.fulfill({
      contentType: "text/javascript",
      body: readFileSync(path.join(CONSOLE_STATIC_DIR, path.basename(name))),
    });
  });
  await page.goto(`${ORIGIN}/console/blank`);
  await page.waitForFunction(
    () => typeof (globalThis as unknown as { renderCard?: unknown }).renderCard === "function",
  );
});

afterAll(async () => {
  await browser?.close();
});

/** The few DOM members the test reads in the page (the test program has no DOM types). */
interface DomNode {
  readonly textContent: string | null;
  readonly outerHTML: string;
  readonly nextElementSibling: DomNode | null;
  querySelector(selector: string): DomNode | null;
  querySelectorAll(selector: string): ArrayLike<DomNode>;
  cloneNode(deep: boolean): DomNode;
  getAttribute(name: string): string | null;
  replaceWith(text: string): void;
}

/** Renders `card` with the console's cards.js and reads back what the HTML says, fact by fact. */
async function htmlFacts(card: Card): Promise<CardFactList & { readonly html: string }> {
  return page.evaluate(
    (c) => {
      const page = globalThis as unknown as {
        renderCard(card: unknown): DomNode;
        document: { body: { replaceChildren(n: DomNode): void } };
      };
      const root = page.renderCard(c);
      page.document.body.replaceChildren(root);
      // What a reader reads: dates as the instant they name (the card model's plain form).
      const read = (e: DomNode | null): string => {
        if (!e) return "";
        const copy = e.cloneNode(true);
        for (const t of Array.from(copy.querySelectorAll("time"))) t.replaceWith(t.getAttribute("datetime") ?? "");
        return copy.textContent ?? "";
      };
      const notice = root.querySelector(".notice");
      const footer = root.querySelector(".footer");
      const tool = root.querySelector(".tool-name");
      return {
        title: read(root.querySelector("h3")),
        lines: Array.from(root.querySelectorAll("p.line")).map(read),
        ...(tool ? { tool: tool.textContent ?? "" } : {}),
        args: Array.from(root.querySelectorAll("dl.args dt")).map(
          (dt) => [dt.querySelector(".arg-name")?.textContent ?? "", dt.nextElementSibling?.textContent ?? ""] as const,
        ),
        ...(notice ? { notice: read(notice) } : {}),
        ...(footer ? { footer: read(footer) } : {}),
        actions: Array.from(root.querySelectorAll(".actions .action")).map((b) => b.textContent ?? ""),
        html: root.outerHTML,
      };
    },
    card as unknown as Record<string, unknown>,
  );
}

const approval: Approval = {
  id: "appr_1",
  nonce: "n",
  connectionId: "conn_1",
  teamId: "T_LOCAL",
  channelId: "C_GENERAL",
  threadTs: "1.000001",
  ownerUserId: "U_ALICE",
  borrowerUserId: "U_BOB",
  service: "demo",
  tool: "add_note",
  argsHash: "h",
  status: "pending",
  createdAt: 1_700_000_000_000,
  expiresAt: 1_700_000_120_000,
  decidedAt: null,
  decidedBy: null,
  cardChannel: null,
  cardTs: null,
};

function model(args: Record<string, unknown>, write: boolean, redactor = new Redactor([])): ApprovalCard {
  return {
    borrowerUserId: "U_BOB",
    ownerUserId: "U_ALICE",
    service: "demo",
    serviceDisplayName: "Demo notes",
    tool: "add_note",
    write,
    reason: write ? "write_under_grant" : "no_grant",
    ...approvalArgFacts(args, redactor, write),
    teamId: "T_LOCAL",
    channelId: "C_GENERAL",
    threadTs: "1.000001",
    expiresAt: approval.expiresAt,
  };
}

function slackButtons(blocks: unknown[]): string[] {
  return (blocks as Record<string, unknown>[])
    .filter((b) => b.type === "actions")
    .flatMap((b) => (b.elements as Record<string, Record<string, unknown>>[]).map((e) => String(e.text!.text)));
}

describe("one card rendered by Slack and by the console says the same facts", () => {
  it("an approval card with hostile text: every argument exactly as the vendor receives it, as inert text, the same buttons as Slack", async () => {
    const m = model(
      {
        title: "<img src=x onerror=alert(1)> & milk",
        body: "line one\n*line two*",
        count: 2,
        tags: ["a", "b"],
        zw: "a\u200Bb",
        padded: "  two spaces each side  ",
      },
      false,
    );
    const card = approvalCard(m);
    const html = await htmlFacts(card);
    const { html: markup, ...facts } = html;
    expect(facts).toEqual({
      ...cardFactList(card, undefined, "console"),
      args: cardFactList(card, undefined, "console").args.map(([k, v]) => [k, v]),
    });
    // The Slack renderer shows the same arguments and buttons.
    const blocks = approvalCardBlocks(approval, m);
    expect(facts.args).toEqual([...argumentsShown(blocks).entries()]);
    expect(facts.actions).toEqual(slackButtons(blocks));
    // Text stays text: no element came out of an argument value.
    expect(markup).not.toContain("<img");
    expect(await page.locator("img").count()).toBe(0);
  });

  it("a write's card and a Deny-only card (the owner's credential in an argument) offer what Slack offers, with the same notice", async () => {
    const write = model({ text: "hi" }, true);
    const w = await htmlFacts(approvalCard(write));
    expect(w.actions).toEqual(["Just once", "Deny"]);
    expect(w.actions).toEqual(slackButtons(approvalCardBlocks(approval, write)));
    const red = model({ token: "canary-secret-value-42" }, false, new Redactor(["canary-secret-value-42"]));
    const r = await htmlFacts(approvalCard(red));
    const { html, ...facts } = r;
    expect(facts).toEqual({
      ...cardFactList(approvalCard(red), undefined, "console"),
      args: cardFactList(approvalCard(red), undefined, "console").args.map(([k, v]) => [k, v]),
    });
    expect(r.actions).toEqual(["Deny"]);
    expect(html).not.toContain("canary-secret-value-42");
  });

  it("consent and notice cards: the HTML lists exactly the card's facts", async () => {
    const registry = parseRegistry(
      {
        services: {
          demo: {
            displayName: "Demo notes",
            transport: { type: "stdio", command: "node", args: ["x"], credentialEnv: { T: "{{token}}" } },
            capture: { strategy: "paste", fields: [{ name: "token", label: "Token" }] },
            scopes: ["thread", "user"],
            tools: { list_notes: ["borrowable", "read"] },
          },
        },
      },
      "test",
    );
    const demo = registry.get("demo")!;
    const conn: Connection = {
      id: "conn_1",
      teamId: "T_LOCAL",
      ownerUserId: "U_ALICE",
      service: "demo",
      scope: "thread",
      channelId: "C_GENERAL",
      threadTs: "1.000001",
      status: "active",
      sealed: null,
      label: null,
      createdBy: "U_ALICE",
      createdAt: 0,
      updatedAt: 0,
      expiresAt: 8 * 3_600_000,
      endedAt: null,
      endedReason: null,
    };
    for (const card of [
      consentCard(demo, { kind: "continue" }),
      consentCard(demo, { kind: "link", url: "http://127.0.0.1:1/login/l/abc" }),
      connectionReadyCard(conn, demo),
      revokedCard(conn, "U_CAROL"),
    ]) {
      const { html: _html, ...facts } = await htmlFacts(card);
      expect(facts).toEqual({ ...cardFactList(card, undefined, "console"), args: [] });
    }
  });
});
