import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { demoRegistryDoc } from "../../src/config/demo-registry.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { DEMO_TEAM, LOCAL_TEAM_ID } from "../../src/workspace/local/model.js";
import { runInProcess } from "./run.js";

// `connections login` mints the same one-time link the consent card's Continue does, for the named
// user only, and the broker serving SLAUDE_PUBLIC_URL (another process, same store and key) opens it.

let dir: string;
let env: Record<string, string>;
let app: RunningApp;

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-login-cli-"));
  const registryPath = path.join(dir, "services.json");
  writeFileSync(registryPath, JSON.stringify(demoRegistryDoc()));
  env = {
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: dir,
    SLAUDE_REGISTRY_PATH: registryPath,
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    PORT: "0",
  };
  app = await startApp({
    config: loadConfig(env),
    log: memoryLogger(),
    registry: parseRegistry(demoRegistryDoc(), "demo"),
  });
  env.SLAUDE_PUBLIC_URL = app.url;
  // The demo team, as a development start seeds it (a test start seeds nothing).
  await app.store.workspace.seed(
    { teamId: LOCAL_TEAM_ID, users: DEMO_TEAM.users, channels: DEMO_TEAM.channels },
    Date.now(),
  );
});

afterEach(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("connections login", () => {
  it("prints a one-time link for that user and thread; the broker opens it once, then refuses it", async () => {
    const r = await runInProcess(
      [
        "connections",
        "login",
        "--team",
        "T_LOCAL",
        "--user",
        "UALICE",
        "--service",
        "demo",
        "--thread",
        "C_GENERAL/1700000000.000100",
      ],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const url = r.stdout.trim();
    expect(url).toMatch(new RegExp(`^${app.url.replace(/[.]/g, "\\.")}/login/l/[A-Za-z0-9_-]{43}$`));
    expect(r.stderr).toContain("UALICE");
    expect(r.stderr).not.toContain(url.split("/").pop()!);

    const [audit, ...more] = await app.store.audit.query({ event: "login_started" });
    expect(more).toEqual([]);
    expect(audit).toMatchObject({
      callerUserId: "UALICE",
      service: "demo",
      decision: "link_minted",
      channelId: "C_GENERAL",
      threadTs: "1700000000.000100",
    });
    const first = await fetch(url, { redirect: "manual" });
    expect(first.status).toBe(200);
    await first.body?.cancel();
    const opened = (await app.store.audit.query({ event: "login_started" })).filter(
      (e) => e.decision === "link_opened",
    );
    expect(opened.map((e) => e.callerUserId)).toEqual(["UALICE"]);
    const second = await fetch(url, { redirect: "manual" });
    expect(second.status).not.toBe(200);
  });

  it("without --thread mints a user-scoped link; refuses unknown services (1) and malformed arguments (2)", async () => {
    const user = await runInProcess(
      ["connections", "login", "--team", "T_LOCAL", "--user", "UBOB", "--service", "demo"],
      env,
    );
    expect(user.code, user.stderr).toBe(0);
    expect(user.stderr).toContain("scope user");

    const unknown = await runInProcess(
      ["connections", "login", "--team", "T_LOCAL", "--user", "UBOB", "--service", "nope"],
      env,
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown service "nope" (known: demo)');

    for (const args of [
      ["--team", "T_LOCAL", "--user", "UBOB"],
      ["--team", "T_LOCAL", "--user", "UBOB", "--service", "demo", "--thread", "C_GENERAL"],
      ["--team", "T LOCAL", "--user", "UBOB", "--service", "demo"],
      ["--team", "T_LOCAL", "--user", "UBOB", "--service", "demo", "extra"],
    ]) {
      const r = await runInProcess(["connections", "login", ...args], env);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout).toBe("");
    }
    expect(await app.store.audit.query({ event: "login_started" })).toHaveLength(1);
  });

  it("refuses a user the local workspace does not have: a clear message, exit 1, and no link minted", async () => {
    const r = await runInProcess(
      ["connections", "login", "--team", "T_LOCAL", "--user", "UNOBODY", "--service", "demo"],
      env,
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain(
      'unknown user "UNOBODY" in the local workspace (its users: UALICE, UBOB, UCAROL); no link minted',
    );
    expect(await app.store.audit.query({ event: "login_started" })).toEqual([]);
    // Every minted session would be due by then: none was created.
    expect(await app.store.loginSessions.expireDue(Number.MAX_SAFE_INTEGER)).toEqual([]);
  });
});
