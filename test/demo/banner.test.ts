import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startupBanner } from "../../src/app/banner.js";

// The start-up block as text: the console link first when there is one, and an Inspector command
// a shell expands to the right headers even when the data directory's path has spaces or quotes.

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("startup banner", () => {
  it("puts the console link first and leaves it out when there is no console", () => {
    const withConsole = startupBanner({
      mcpUrl: "http://127.0.0.1:8080/mcp",
      consoleUrl: "http://127.0.0.1:8080/console/?token=abc",
      hostToken: { file: "/d/host-token" },
      exampleThread: "T_LOCAL/C_GENERAL/1.2",
    });
    const lines = withConsole.split("\n");
    expect(lines.findIndex((l) => l.includes("Console:"))).toBeLessThan(lines.findIndex((l) => l.includes("MCP URL:")));
    expect(
      startupBanner({ mcpUrl: "http://x/mcp", hostToken: { file: "/d/host-token" }, exampleThread: "T/C/1.2" }),
    ).not.toContain("Console");
  });

  it("its Inspector command passes the token file's content and the thread as exactly two headers, whatever the path", () => {
    const base = mkdtempSync(path.join(os.tmpdir(), "banner-"));
    dirs.push(base);
    const dir = path.join(base, "it's a dir");
    mkdirSync(dir);
    const file = path.join(dir, "host-token");
    writeFileSync(file, "slaude_dev_TOKENVALUE\n");
    const banner = startupBanner({
      mcpUrl: "http://127.0.0.1:8080/mcp",
      hostToken: { file },
      exampleThread: "T_LOCAL/C_GENERAL/1700000000.000100",
    });
    const command = banner
      .split("\n")
      .find((l) => l.includes("npx @modelcontextprotocol/inspector"))!
      .trim();
    // The shell runs a printer in npx's place: one argument per line shows how the words split.
    const printed = execFileSync(
      "/bin/sh",
      ["-c", command.replace("npx @modelcontextprotocol/inspector", `printf '%s\\n'`)],
      { encoding: "utf8" },
    );
    expect(printed.split("\n").filter(Boolean)).toEqual([
      "--cli",
      "http://127.0.0.1:8080/mcp",
      "--transport",
      "http",
      "--header",
      "Authorization: Bearer slaude_dev_TOKENVALUE",
      "--header",
      "X-Slaude-Thread: T_LOCAL/C_GENERAL/1700000000.000100",
      "--method",
      "tools/list",
    ]);
    expect(banner).not.toContain("TOKENVALUE");
  });

  it("with a local thread prints the turn's curl and the Inspector's tools/call, each splitting into exactly the intended words", () => {
    const base = mkdtempSync(path.join(os.tmpdir(), "banner-"));
    dirs.push(base);
    const dir = path.join(base, "it's a dir");
    mkdirSync(dir);
    const file = path.join(dir, "host-token");
    writeFileSync(file, "slaude_dev_TOKENVALUE\n");
    const banner = startupBanner({
      mcpUrl: "http://127.0.0.1:8080/mcp",
      hostToken: { file },
      exampleThread: "<team_id>/<channel_id>/<thread_ts>",
      tryCall: {
        teamId: "T_LOCAL",
        channelId: "C_GENERAL",
        channelName: "general",
        threadTs: "1764630000.000100",
        userId: "UALICE",
        userName: "Alice",
        service: "demo",
      },
    });
    const words = (line: string, program: string) =>
      execFileSync("/bin/sh", ["-c", line.trim().replace(program, `printf '%s\\n'`)], { encoding: "utf8" })
        .split("\n")
        .filter(Boolean);
    const lines = banner.split("\n");
    expect(words(lines.find((l) => l.trim().startsWith("curl "))!, "curl")).toEqual([
      "-fsS",
      "-X",
      "POST",
      "http://127.0.0.1:8080/v1/turns",
      "-H",
      "Authorization: Bearer slaude_dev_TOKENVALUE",
      "-H",
      "Content-Type: application/json",
      "-d",
      '{"team_id":"T_LOCAL","channel_id":"C_GENERAL","thread_ts":"1764630000.000100","user_id":"UALICE"}',
    ]);
    expect(
      words(
        lines.find((l) => l.includes("npx @modelcontextprotocol/inspector"))!,
        "npx @modelcontextprotocol/inspector",
      ).slice(5),
    ).toEqual([
      "Authorization: Bearer slaude_dev_TOKENVALUE",
      "--header",
      "X-Slaude-Thread: T_LOCAL/C_GENERAL/1764630000.000100",
      "--method",
      "tools/call",
      "--tool-name",
      "mcp_describe",
      "--tool-arg",
      "service=demo",
    ]);
    expect(banner).toContain(
      "Call a tool as Alice, in Alice's thread in #general (T_LOCAL/C_GENERAL/1764630000.000100)",
    );
    expect(banner).not.toContain("TOKENVALUE");
  });

  it("is what docs/local-workspace.md shows under From a terminal, line for line", () => {
    const doc = readFileSync(new URL("../../docs/local-workspace.md", import.meta.url), "utf8");
    const section = doc.slice(doc.indexOf("### From a terminal"));
    const shown = section.slice(
      section.indexOf("```text\n") + "```text\n".length,
      section.indexOf("\n```", section.indexOf("```text\n")),
    );
    const banner = startupBanner({
      mcpUrl: "http://127.0.0.1:8080/mcp",
      hostToken: { file: "/home/me/slaude-connect/data/host-token" },
      exampleThread: "<team_id>/<channel_id>/<thread_ts>",
      tryCall: {
        teamId: "T_LOCAL",
        channelId: "C_GENERAL",
        channelName: "general",
        threadTs: "1764630000.000100",
        userId: "UALICE",
        userName: "Alice",
        service: "demo",
      },
    });
    const lines = banner.split("\n");
    const printed = lines.slice(
      lines.findIndex((l) => l.startsWith("  MCP URL:")),
      lines.lastIndexOf("=".repeat(72)),
    );
    expect(shown.split("\n")).toEqual(printed);
  });
});
