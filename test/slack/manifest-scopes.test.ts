// The Slack manifests are held to the code: every Web API method the sources call has a row in the
// method→scope table (src/slack/scopes.ts), every event a handler listens to is subscribed, and each
// manifest asks for exactly the scopes the table needs: none missing, none unused.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { requiredBotScopes, SLACK_EVENT_SCOPES, SLACK_METHOD_SCOPES } from "../../src/slack/scopes.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const MANIFESTS = readdirSync(path.join(ROOT, "slack")).filter((f) => /^manifest.*\.(ya?ml|json)$/.test(f));

/** Every .ts file under src/. */
function sources(dir = path.join(ROOT, "src")): { file: string; text: string }[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(path.join(dir, e.name))
      : e.name.endsWith(".ts")
        ? [{ file: path.relative(ROOT, path.join(dir, e.name)), text: readFileSync(path.join(dir, e.name), "utf8") }]
        : [],
  );
}

/** The items of the YAML block list under `key` at `indent` spaces (our manifests' own simple shape). */
function yamlList(text: string, key: string): string[] {
  const lines = text.split("\n");
  const at = lines.findIndex((l) => l.trimEnd() === `${key}:` || l.trim() === `${key}:`);
  if (at < 0) return [];
  const indent = lines[at]!.length - lines[at]!.trimStart().length;
  const out: string[] = [];
  for (const l of lines.slice(at + 1)) {
    if (l.trim() === "" || l.trim().startsWith("#")) continue;
    const ind = l.length - l.trimStart().length;
    if (ind <= indent && !l.trimStart().startsWith("- ")) break;
    const m = /^\s*-\s+(\S+)/.exec(l);
    if (!m) break;
    out.push(m[1]!);
  }
  return out;
}

/** Bot scopes, bot events and whether slash commands are declared, from one manifest file. */
function readManifest(file: string): { scopes: string[]; events: string[]; commands: boolean } {
  const text = readFileSync(path.join(ROOT, "slack", file), "utf8");
  if (file.endsWith(".json")) {
    const doc = JSON.parse(text) as {
      oauth_config?: { scopes?: { bot?: string[] } };
      settings?: { event_subscriptions?: { bot_events?: string[] } };
      features?: { slash_commands?: unknown[] };
    };
    return {
      scopes: doc.oauth_config?.scopes?.bot ?? [],
      events: doc.settings?.event_subscriptions?.bot_events ?? [],
      commands: (doc.features?.slash_commands?.length ?? 0) > 0,
    };
  }
  // Only the lines after `oauth_config:` hold the bot scopes (a `bot:` key could appear elsewhere).
  const oauth = text.slice(text.indexOf("\noauth_config:"));
  return {
    scopes: yamlList(oauth, "bot"),
    events: yamlList(text, "bot_events"),
    commands: /^\s+slash_commands:\s*$/m.test(text),
  };
}

describe("the Slack manifests match the code", () => {
  const src = sources();

  it("every Web API method the code calls is in the method→scope table, and the table lists no method nobody calls", () => {
    const called = new Set<string>();
    for (const { text } of src) {
      for (const m of text.matchAll(/\bclient\.(\w+)\.(\w+)\(/g)) called.add(`${m[1]}.${m[2]}`);
      for (const m of text.matchAll(/\bapiCall\(\s*["'`]([\w.]+)["'`]/g)) called.add(m[1]!);
      // The WebClient's own pager calls the method it is given, page after page.
      for (const m of text.matchAll(/\bpaginate\(\s*["'`]([\w.]+)["'`]/g)) called.add(m[1]!);
    }
    expect(called.size).toBeGreaterThan(5);
    const table = Object.keys(SLACK_METHOD_SCOPES);
    expect(
      [...called].filter((m) => !table.includes(m)),
      "called but not in src/slack/scopes.ts",
    ).toEqual([]);
    // auth.test is Bolt's own call at start (token verification), not ours.
    expect(
      table.filter((m) => m !== "auth.test" && !called.has(m)),
      "in the table but never called",
    ).toEqual([]);
  });

  it("every event a handler listens to is in the event table", () => {
    const handled = new Set<string>();
    for (const { text } of src)
      for (const m of text.matchAll(/\bapp\.event\(\s*["'`]([\w.]+)["'`]/g)) handled.add(m[1]!);
    expect(handled.size).toBeGreaterThan(2);
    const table = Object.keys(SLACK_EVENT_SCOPES);
    // `message` arrives as message.channels / message.groups subscriptions.
    for (const e of handled)
      expect(
        table.some((t) => t === e || t.startsWith(`${e}.`)),
        e,
      ).toBe(true);
    for (const t of table) expect(handled.has(t) || handled.has(t.split(".")[0]!), t).toBe(true);
  });

  it.each(MANIFESTS)("%s asks for exactly the scopes the code needs and subscribes to the handled events", (file) => {
    const m = readManifest(file);
    expect(m.scopes.length).toBeGreaterThan(0);
    const required = requiredBotScopes();
    expect(
      m.scopes.filter((s) => !required.includes(s)),
      `${file}: scopes nothing uses`,
    ).toEqual([]);
    expect(
      required.filter((s) => !m.scopes.includes(s)),
      `${file}: scopes the code needs`,
    ).toEqual([]);
    expect([...m.events].sort()).toEqual(Object.keys(SLACK_EVENT_SCOPES).sort());
    expect(m.commands).toBe(true);
  });

  it("there are manifests to check", () => {
    expect(MANIFESTS.sort()).toEqual(["manifest.distribution.yaml", "manifest.socket-mode.yaml", "manifest.yaml"]);
  });
});

describe("the distribution manifest", () => {
  const text = readFileSync(path.join(ROOT, "slack", "manifest.distribution.yaml"), "utf8");
  it("redirects to /slack/oauth_redirect, deploys org-wide and rotates tokens; the single-workspace ones do not rotate", () => {
    expect(yamlList(text.slice(text.indexOf("\noauth_config:")), "redirect_urls")).toEqual([
      "https://YOUR-HOST/slack/oauth_redirect",
    ]);
    expect(text).toMatch(/^\s+org_deploy_enabled: true$/m);
    expect(text).toMatch(/^\s+token_rotation_enabled: true$/m);
    for (const f of ["manifest.yaml", "manifest.socket-mode.yaml"])
      expect(readFileSync(path.join(ROOT, "slack", f), "utf8")).toMatch(/^\s+token_rotation_enabled: false$/m);
  });
});
