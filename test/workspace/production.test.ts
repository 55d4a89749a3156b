// Production never runs the local workspace (nor anything the console builds on it): without Slack
// the start refuses, naming the Slack variables; with Slack, Slack is the workspace. `doctor` and the
// start-up log say which workspace runs.
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { ConfigError } from "../../src/config/errors.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { runBin, runInProcess } from "../cli/run.js";
import { type FakeSlack, startFakeSlack } from "../fixtures/slack/fake-slack-api.js";
import { fixtureRegistryDoc } from "../integration/broker-harness.js";

const dirs: string[] = [];
const apps: RunningApp[] = [];
let fake: FakeSlack | undefined;

afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
  await fake?.close();
  fake = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), "slaude-prod-ws-"));
  dirs.push(d);
  return d;
}

/** A production environment that passes every other start-up check (key, child uids as root). */
function prodEnv(dir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    NODE_ENV: "production",
    SLAUDE_DATA_DIR: path.join(dir, "data"),
    PORT: "0",
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    SLAUDE_CHILD_UID_BASE: "200000",
    SLAUDE_HOST_TOKENS: `host-${randomBytes(16).toString("hex")}`,
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    ...extra,
  };
}

describe("the workspace in production", () => {
  it("`serve` without Slack refuses to start, naming the Slack variables, and creates nothing", async () => {
    const dir = tmp();
    const r = await runBin(["serve"], prodEnv(dir));
    // A configuration error: exit 2, one line naming what to set.
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^configuration error: Slack is not configured and NODE_ENV=production: set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET/m,
    );
    expect(r.stderr).not.toMatch(/listening/);
    expect(existsSync(path.join(dir, "data"))).toBe(false);
  });

  it("startApp refuses too, for each way of asking for it: the socket-mode variables are named, and SLAUDE_WORKSPACE=local is refused", async () => {
    for (const [extra, named] of [
      [{}, "SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET (SLACK_MODE=http)"],
      [{ SLACK_MODE: "socket" }, "SLACK_BOT_TOKEN and SLACK_APP_TOKEN (SLACK_MODE=socket)"],
      [{ SLAUDE_WORKSPACE: "local" }, "never run with NODE_ENV=production"],
      [{ SLAUDE_WORKSPACE: "slack" }, "SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET"],
    ] as const) {
      const dir = tmp();
      const config = loadConfig(prodEnv(dir, extra));
      const err = await startApp({
        config,
        log: memoryLogger(),
        registry: parseRegistry(fixtureRegistryDoc(), "test"),
      }).then(
        (a) => {
          apps.push(a);
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).message).toContain(named);
      expect(existsSync(config.dataDir)).toBe(false);
    }
  });

  it("with Slack configured, Slack is the workspace: no local workspace, no console, nothing seeded", async () => {
    fake = await startFakeSlack({ admins: [] });
    const dir = tmp();
    const log = memoryLogger("info");
    const config = loadConfig(
      prodEnv(dir, {
        SLACK_BOT_TOKEN: fake.botToken,
        SLACK_SIGNING_SECRET: `signing-${randomBytes(8).toString("hex")}`,
        SLACK_API_URL: fake.apiUrl,
      }),
    );
    const app = await startApp({ config, log, registry: parseRegistry(fixtureRegistryDoc(), "test") });
    apps.push(app);
    expect(app.workspace.kind).toBe("slack");
    expect(app.workspace.local).toBeUndefined();
    expect(await app.store.workspace.users("T_LOCAL")).toEqual([]);
    expect((await fetch(`${app.url}/console/`)).status).toBe(404);
    expect(log.lines.join("\n")).toMatch(/workspace: slack/);
  });

  it("doctor reports the workspace: an error naming the Slack variables in production, local in development", async () => {
    const prod = await runInProcess(["doctor"], prodEnv(tmp()));
    expect(prod.code).toBe(1);
    expect(prod.stdout).toMatch(
      /^ERROR workspace: Slack is not configured and NODE_ENV=production: set SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET/m,
    );
    const dev = await runInProcess(["doctor"], prodEnv(tmp(), { NODE_ENV: "development" }));
    expect(dev.stdout).toMatch(/^ok {4}workspace: local \(Slack is not configured \(development\)\)/m);
    expect(dev.stdout).toMatch(/^WARN {2}slack: Slack is not configured .*the local workspace serves people instead/m);
  });
});
