import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { demoRegistryDoc } from "../../src/config/demo-registry.js";
import { devHostTokenPath, resolveHostTokens } from "../../src/config/dev-host-token.js";
import { loadConfig } from "../../src/config/env.js";
import { ConfigError } from "../../src/config/errors.js";
import { parseRegistry } from "../../src/config/registry.js";
import { resolveRegistry } from "../../src/config/registry-source.js";
import { memoryLogger } from "../../src/log/logger.js";
import { runInProcess } from "../cli/run.js";

// A development start on a fresh data directory, as `npm start` makes it: the demo registry when
// there is no services.json, a generated host token (0600, reused) when SLAUDE_HOST_TOKENS is
// empty, and a start-up block whose MCP Inspector command really connects. Test and production
// starts keep refusing every host without configured tokens.

const INSPECTOR_BIN = fileURLToPath(
  new URL("../../node_modules/@modelcontextprotocol/inspector/cli/build/cli.js", import.meta.url),
);

const dirs: string[] = [];
const apps: RunningApp[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), "slaude-devstart-"));
  dirs.push(d);
  return d;
}

function env(dir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SLAUDE_DATA_DIR: dir,
    PORT: "0",
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    ...extra,
  };
}

async function start(e: Record<string, string>): Promise<RunningApp> {
  const app = await startApp({
    config: loadConfig(e),
    log: memoryLogger(),
    registry: parseRegistry(demoRegistryDoc(), "demo"),
  });
  apps.push(app);
  return app;
}

async function initialize(app: RunningApp, token: string | undefined): Promise<number> {
  const r = await fetch(`${app.url}/mcp`, {
    method: "POST",
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      "x-slaude-thread": "T_LOCAL/C_GENERAL/1700000000.000100",
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    }),
  });
  await r.body?.cancel();
  return r.status;
}

describe("demo registry selection", () => {
  it("development without services.json runs the demo service; test runs none; production refuses", () => {
    const cwd = tmp();
    const dev = resolveRegistry(loadConfig({}), cwd);
    expect(dev.path).toBeUndefined();
    expect(dev.registry.list().map((s) => s.name)).toEqual(["demo"]);
    expect(dev.note).toContain("demo registry");
    expect(dev.note).toContain(path.join(cwd, "services.json"));
    expect(resolveRegistry(loadConfig({ NODE_ENV: "test" }), cwd).registry.list()).toEqual([]);
    expect(() => resolveRegistry({ ...loadConfig({}), production: true, nodeEnv: "production" }, cwd)).toThrow(
      ConfigError,
    );
  });
});

describe("development host token", () => {
  it("is generated once into the data directory (0600), accepted on /mcp, and reused after a restart", async () => {
    const dir = tmp();
    const e = env(dir, { NODE_ENV: "development" });
    const app = await start(e);
    const file = devHostTokenPath(dir);
    expect(app.hostTokenFile).toBe(file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const token = readFileSync(file, "utf8").trim();
    expect(app.hostToken).toBe(token);
    expect(await initialize(app, undefined)).toBe(401);
    expect(await initialize(app, `slaude_dev_${"x".repeat(43)}`)).toBe(401);
    expect(await initialize(app, token)).toBe(200);
    await app.close();
    apps.length = 0;

    const again = await start(e);
    expect(again.hostToken).toBe(token);
    expect(await initialize(again, token)).toBe(200);
  });

  it("is never generated in test or production, nor when SLAUDE_HOST_TOKENS is set", async () => {
    const testDir = tmp();
    const app = await start(env(testDir, { NODE_ENV: "test" }));
    expect(app.hostToken).toBeUndefined();
    expect(existsSync(devHostTokenPath(testDir))).toBe(false);
    expect(await initialize(app, undefined)).toBe(401);
    expect(app.banner).toContain("none configured");
    // Production is judged without starting (a production start has further requirements of its own).
    const prodDir = tmp();
    expect(resolveHostTokens(loadConfig(env(prodDir, { NODE_ENV: "production" })))).toEqual({
      tokens: [],
      origin: "none",
    });
    expect(existsSync(devHostTokenPath(prodDir))).toBe(false);
    const dir = tmp();
    const configured = await start(
      env(dir, { NODE_ENV: "development", SLAUDE_HOST_TOKENS: "configured-host-token-1" }),
    );
    expect(existsSync(devHostTokenPath(dir))).toBe(false);
    expect(configured.hostToken).toBe("configured-host-token-1");
    expect(configured.banner).toContain("one of SLAUDE_HOST_TOKENS");
  });

  it("doctor names the file in development without creating it, and warns elsewhere", async () => {
    const dir = tmp();
    const dev = await runInProcess(["doctor"], env(dir, { NODE_ENV: "development" }));
    expect(dev.stdout).toContain(`ok    host tokens: development: serve accepts the token in ${devHostTokenPath(dir)}`);
    expect(existsSync(devHostTokenPath(dir))).toBe(false);
    const test = await runInProcess(["doctor"], env(tmp(), { NODE_ENV: "test" }));
    expect(test.stdout).toMatch(/^WARN {2}host tokens: SLAUDE_HOST_TOKENS is empty/m);
  });

  it("refuses a token file other users can read, or one that is not a token", () => {
    const dir = tmp();
    const config = loadConfig(env(dir, { NODE_ENV: "development" }));
    resolveHostTokens(config);
    chmodSync(devHostTokenPath(dir), 0o644);
    expect(() => resolveHostTokens(config)).toThrow(/readable by other users/);
    rmSync(devHostTokenPath(dir));
    const other = tmp();
    const c2 = loadConfig(env(other, { NODE_ENV: "development" }));
    writeFileSync(devHostTokenPath(other), "short\n", { mode: 0o600 });
    expect(() => resolveHostTokens(c2)).toThrow(/malformed/);
  });
});

describe("start-up block", () => {
  it("names the MCP URL and the token file, never the token, and its Inspector command, ended as the block says, lists the broker's tools", async () => {
    const dir = tmp();
    const app = await start(env(dir, { NODE_ENV: "development" }));
    const token = app.hostToken!;
    expect(app.banner).toContain(`${app.url}/mcp`);
    expect(app.banner).toContain(devHostTokenPath(dir));
    expect(app.banner).not.toContain(token);
    expect(app.banner).toContain("the same command ending in --method tools/list instead lists the broker's tools");
    const line = app.banner.split("\n").find((l) => l.includes("npx @modelcontextprotocol/inspector"));
    expect(line).toBeDefined();
    // The same command, run by a shell with the installed Inspector in place of npx's download,
    // ending in --method tools/list as the block says (test/demo/startup-commands.test.ts runs it unchanged).
    const command = line!
      .trim()
      .replace(
        "npx @modelcontextprotocol/inspector",
        `${JSON.stringify(process.execPath)} ${JSON.stringify(INSPECTOR_BIN)}`,
      )
      .replace(/ --method tools\/call .*$/, " --method tools/list");
    const run = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(
        "/bin/sh",
        ["-c", command],
        {
          timeout: 30_000,
          env: {
            PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? "/usr/bin:/bin"}`,
            HOME: dir,
            NO_COLOR: "1",
          },
        },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
    expect(run.code, run.stderr).toBe(0);
    const doc = JSON.parse(run.stdout) as { tools: { name: string }[] };
    expect(doc.tools.map((t) => t.name)).toContain("mcp_call");
  });
});
