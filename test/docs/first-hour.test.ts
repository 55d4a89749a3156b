import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/env.js";
import { chooseWorkspace } from "../../src/workspace/choice.js";
import { ROOT, read } from "./sources.js";

// What a newcomer acts on in the README's first screen is true: the two commands exist as
// written, the picture is the console (written by test/console/console-live.test.ts), and the
// claim that everything runs without Slack is what the code decides for a zero-environment start.

const readme = read("README.md");
/** The README up to its first reference section: what a reader sees before scrolling far. */
const opening = readme.slice(0, readme.indexOf("## Next"));
const pkg = JSON.parse(read("package.json")) as { scripts: Record<string, string> };

describe("the README's opening tells a newcomer the truth", () => {
  it("shows the console's picture, and the picture exists", () => {
    const img = /!\[[^\]]+\]\((docs\/images\/[a-z0-9-]+\.png)\)/.exec(opening);
    expect(img, "a console screenshot in the opening").not.toBeNull();
    expect(existsSync(path.join(ROOT, img![1]!))).toBe(true);
  });

  it("names the two commands, and package.json has both scripts", () => {
    expect(opening).toContain("```sh\nnpm ci && npm start\n```");
    expect(opening).toContain("```sh\nnpm test\n```");
    expect(pkg.scripts.start).toMatch(/slaude-connect\.js serve$/);
    expect(pkg.scripts.test).toMatch(/vitest/);
  });

  it("says calls run without Slack, which is what a zero-environment start chooses", () => {
    expect(readme).not.toMatch(/Slack is required/i);
    expect(readme).not.toMatch(/every `mcp_call` is refused/i);
    expect(opening).toMatch(/no Slack, no configuration/);
    expect(opening).toMatch(/Calls really run/);
    // `npm start` with no environment at all: development, Slack unset → the local workspace
    // (the membership source that lets calls run), never "none" (every call refused).
    const config = loadConfig({ PATH: "/usr/bin:/bin" });
    expect(config.production).toBe(false);
    expect(chooseWorkspace(config).kind).toBe("local");
  });

  it("names what the start-up block prints (the console link, a curl, an Inspector tools/call)", () => {
    expect(opening).toContain("/console/?token=");
    expect(opening).toMatch(/`curl`/);
    expect(opening).toMatch(/Inspector\s+`tools\/call`/);
  });

  it("links every reference page it sends the reader to, and each exists", () => {
    const links = [...readme.slice(readme.indexOf("## Next")).matchAll(/\]\((docs\/[a-z-]+\.md)\)/g)].map((m) => m[1]!);
    expect(links).toEqual(
      expect.arrayContaining([
        "docs/configuration.md",
        "docs/cli.md",
        "docs/development.md",
        "docs/local-workspace.md",
      ]),
    );
    for (const l of links) expect(existsSync(path.join(ROOT, l)), l).toBe(true);
  });
});
