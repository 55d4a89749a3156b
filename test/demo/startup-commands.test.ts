import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { memoryLogger } from "../../src/log/logger.js";

// The start-up block of a development start (local workspace, demo registry, generated host token),
// run as printed: its commands are taken from the block and handed to a shell unchanged. The curl
// gives the demo user the turn in a thread the local workspace really has; the Inspector's
// tools/call then gets a result. Run from the package root, `npx` finds the Inspector installed
// as a development dependency (offline: npm may not download anything here).

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

const KEY = randomBytes(32).toString("base64");
let dir: string;
let app: RunningApp;

/** As `npm start` in a fresh clone: development, no services.json (the demo registry), no host tokens. */
function devStart(): Promise<RunningApp> {
  return startApp({
    config: loadConfig({
      NODE_ENV: "development",
      SLAUDE_DATA_DIR: dir,
      PORT: "0",
      SLAUDE_ENCRYPTION_KEY: KEY,
      PATH: process.env.PATH ?? "/usr/bin:/bin",
    }),
    log: memoryLogger(),
  });
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-startup-"));
  app = await devStart();
});

afterAll(async () => {
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs one printed command line with /bin/sh from the package root, as a person pastes it. */
function sh(command: string): Promise<Run> {
  const env = {
    PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? "/usr/bin:/bin"}`,
    HOME: dir,
    NO_COLOR: "1",
    npm_config_offline: "true",
    npm_config_update_notifier: "false",
  };
  return new Promise((resolve) =>
    execFile("/bin/sh", ["-c", command], { cwd: ROOT, timeout: 60_000, env }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

/** The block's command lines, in order. */
function commands(banner: string): string[] {
  return banner
    .split("\n")
    .filter((l) => /^ {4}(curl|npx) /.test(l))
    .map((l) => l.trim());
}

interface ToolResult {
  isError?: boolean;
  content?: { type: string; text?: string }[];
  structuredContent?: { service?: string; tools?: { name: string }[]; status?: string; code?: string };
}

describe("the start-up block's commands, run as printed", () => {
  it("name a thread the local workspace has and the demo user, never the host token", async () => {
    const local = app.workspace.local!;
    const threads = await local.threads("C_GENERAL");
    const [curl, inspector, ...more] = commands(app.banner);
    expect(more).toEqual([]);
    expect(curl).toMatch(/^curl -fsS -X POST /);
    expect(inspector).toMatch(/^npx @modelcontextprotocol\/inspector --cli /);
    const ts = /"thread_ts":"(\d+\.\d+)"/.exec(curl!)?.[1];
    expect(threads.map((t) => t.thread.threadTs)).toContain(ts);
    expect(threads.find((t) => t.thread.threadTs === ts)?.startedBy).toBe("UALICE");
    expect(curl).toContain('"user_id":"UALICE"');
    expect(inspector).toContain(`X-Slaude-Thread: T_LOCAL/C_GENERAL/${ts}`);
    expect(app.banner).toContain("as Alice, in Alice's thread in #general");
    expect(app.banner).not.toContain(app.hostToken!);
  });

  it("call a tool: without the turn the Inspector's call is no_turn; after the printed curl it answers the demo service's tools", async () => {
    const [curl, inspector] = commands(app.banner);
    const parse = (r: Run): ToolResult => {
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as ToolResult;
    };
    // Out of order first: the turn is what the call needs (a broker that answered anyway would be wrong).
    const before = parse(await sh(inspector!));
    expect(JSON.stringify(before)).toContain("no_turn");

    const turn = await sh(curl!);
    expect(turn.code, turn.stderr).toBe(0);
    expect(turn.stdout).toBe("");

    const after = parse(await sh(inspector!));
    expect(after.isError ?? false, JSON.stringify(after)).toBe(false);
    expect(JSON.stringify(after)).not.toContain("no_turn");
    expect(after.structuredContent?.service).toBe("demo");
    expect(after.structuredContent?.tools?.map((t) => t.name)).toEqual(
      expect.arrayContaining(["whoami", "list_notes", "add_note"]),
    );

    // docs/local-workspace.md's next steps: the same command calling mcp_call (needs_connect), then connect (a card in her inbox).
    const call = parse(
      await sh(
        inspector!.replace(
          /--tool-name mcp_describe --tool-arg service=demo$/,
          "--tool-name mcp_call --tool-arg service=demo --tool-arg tool=whoami --tool-arg on_behalf_of=UALICE",
        ),
      ),
    );
    expect(JSON.stringify(call)).toContain("needs_connect");
    const connect = parse(
      await sh(
        inspector!.replace(
          /--tool-name mcp_describe --tool-arg service=demo$/,
          "--tool-name connect --tool-arg service=demo",
        ),
      ),
    );
    expect(connect.structuredContent?.service, JSON.stringify(connect)).toBe("demo");
    expect((await app.workspace.local!.inbox("UALICE")).map((i) => i.card.kind)).toContain("consent");
  });

  it("name the same thread after a restart (no thread is started twice)", async () => {
    const first = commands(app.banner)[0];
    const threads = (await app.workspace.local!.threads("C_GENERAL")).length;
    await app.close();
    app = await devStart();
    expect(commands(app.banner)[0]!.replace(/127\.0\.0\.1:\d+/, "")).toBe(first!.replace(/127\.0\.0\.1:\d+/, ""));
    expect((await app.workspace.local!.threads("C_GENERAL")).length).toBe(threads);
  });
});
