import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { ALICE, BOB, fixtureRegistryDoc, THREAD } from "./broker-harness.js";

// A real third-party MCP client against the real app: the MCP Inspector's CLI mode
// (`mcp-inspector --cli <url> --transport http --header ...`), run as a child process. It talks to
// the broker on loopback only.

const INSPECTOR_BIN = fileURLToPath(
  new URL("../../node_modules/@modelcontextprotocol/inspector/cli/build/cli.js", import.meta.url),
);
const TOKEN = `host-${randomBytes(8).toString("hex")}`;
const THREAD_HEADER = `${THREAD.teamId}/${THREAD.channelId}/${THREAD.threadTs}`;

let dir: string;
let app: RunningApp;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-inspector-"));
  app = await startApp({
    config: loadConfig({
      NODE_ENV: "test",
      SLAUDE_DATA_DIR: dir,
      PORT: "0",
      SLAUDE_HOST_TOKENS: TOKEN,
      SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    }),
    log: memoryLogger(),
    membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE, BOB),
    registry: parseRegistry(fixtureRegistryDoc(), "x"),
  });
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

/** Runs `mcp-inspector --cli <app>/mcp --transport http <args>`; the inspector re-spawns `node` from PATH. */
function inspector(args: string[], headers: string[]): Promise<Run> {
  const argv = [
    INSPECTOR_BIN,
    "--cli",
    `${app.url}/mcp`,
    "--transport",
    "http",
    ...args,
    ...headers.flatMap((h) => ["--header", h]),
  ];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      argv,
      {
        timeout: 20_000,
        env: {
          PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? "/usr/bin:/bin"}`,
          HOME: dir,
          NO_COLOR: "1",
        },
      },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const AUTH = [`Authorization: Bearer ${TOKEN}`, `X-Slaude-Thread: ${THREAD_HEADER}`];

describe("MCP Inspector CLI as a real client", () => {
  it("is installed (a missing client fails this test, it is never skipped)", () => {
    expect(existsSync(INSPECTOR_BIN), INSPECTOR_BIN).toBe(true);
  });

  it("lists the five tools over Streamable HTTP with the host token and thread headers", async () => {
    const r = await inspector(["--method", "tools/list"], AUTH);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as { tools: { name: string; inputSchema: { additionalProperties?: boolean } }[] };
    expect(doc.tools.map((t) => t.name).sort()).toEqual([
      "connect",
      "connections_list",
      "connections_revoke",
      "mcp_call",
      "mcp_describe",
    ]);
    for (const t of doc.tools) expect(t.inputSchema.additionalProperties, t.name).toBe(false);
  });

  it("calls a tool: connect answers 'not available yet' for the live turn user", async () => {
    const turn = await fetch(`${app.url}/v1/turns`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({
        team_id: THREAD.teamId,
        channel_id: THREAD.channelId,
        thread_ts: THREAD.threadTs,
        user_id: ALICE,
      }),
    });
    expect(turn.status).toBe(204);
    const r = await inspector(
      ["--method", "tools/call", "--tool-name", "connect", "--tool-arg", "service=vendor"],
      AUTH,
    );
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as { structuredContent?: { status?: string; service?: string } };
    expect(doc.structuredContent).toMatchObject({ status: "not_available", service: "vendor" });
  });

  it("is refused without the host token (the headers above are what let it in)", async () => {
    const noToken = await inspector(["--method", "tools/list"], [`X-Slaude-Thread: ${THREAD_HEADER}`]);
    expect(noToken.code).not.toBe(0);
    expect(noToken.stdout).not.toContain("mcp_call");
    expect(noToken.stderr).toMatch(/401|nauthorized/);
  });
});
