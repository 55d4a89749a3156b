// `registry inspect` interrupted while its vendor runs, as the real CLI process: the vendor (and the
// detached grandchild it left under its private HOME) holds the credential in its environment, and
// a terminal's Ctrl-C never reaches it (it runs in its own process group). SIGINT and SIGTERM kill
// every process of the run before the CLI exits; what a SIGKILLed CLI left behind is swept by the
// next inspect and by `serve` at start-up. The /proc scans look for the credential itself.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { startApp } from "../../src/app/app.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { inspectionsDir } from "../../src/pool/inspect-run.js";
import { testAppConfig } from "../support/app-config.js";
import { newKeyB64, TempDirs, writeRegistryFile } from "../support/foundation.js";
import { isAlive, processesReferencing, waitDead, waitFor } from "../support/proc.js";
import { BIN, runInProcess } from "./run.js";

const STALL_VENDOR = fileURLToPath(new URL("../fixtures/inspect-stall-vendor.mjs", import.meta.url));
const tmp = new TempDirs();
const started: ChildProcess[] = [];
const leftovers: number[] = [];
afterEach(() => {
  for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  // A failing test must not leave credential-holding processes behind for the next one.
  for (const pid of leftovers.splice(0)) if (isAlive(pid)) process.kill(pid, "SIGKILL");
  tmp.cleanup();
});

function setup() {
  const dir = tmp.make();
  const mark = path.join(dir, "stalled.json");
  const transport = (env: Record<string, string>) => ({
    type: "stdio",
    command: process.execPath,
    args: [STALL_VENDOR],
    env,
    credentialEnv: { RT_TOKEN: "{{token}}" },
  });
  const registry = {
    services: {
      stall: { transport: transport({ STALL_MARK: mark }), capture: { strategy: "paste" }, scopes: ["shared"] },
      quick: { transport: transport({}), capture: { strategy: "paste" }, scopes: ["shared"] },
    },
  };
  const dataDir = path.join(dir, "data");
  const env: NodeJS.ProcessEnv = {
    SLAUDE_DATA_DIR: dataDir,
    SLAUDE_REGISTRY_PATH: writeRegistryFile(dir, registry),
    SLAUDE_ENCRYPTION_KEY: newKeyB64(),
    USER: "tester",
  };
  return { dir, dataDir, mark, env, registry };
}

/** Starts `registry inspect stall` as a real process with `token` on stdin; resolves once its vendor stalls on tools/list. */
async function stalledInspect(
  s: ReturnType<typeof setup>,
  token: string,
): Promise<{ cli: ChildProcess; exited: Promise<{ code: number | null; stderr: string }>; pids: number[] }> {
  const cli = spawn(process.execPath, [BIN, "registry", "inspect", "stall"], {
    env: { PATH: process.env.PATH, ...s.env },
    stdio: ["pipe", "pipe", "pipe"],
    shell: false,
  });
  started.push(cli);
  let stderr = "";
  cli.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  cli.stdout!.resume();
  const exited = new Promise<{ code: number | null; stderr: string }>((resolve) =>
    cli.on("close", (code) => resolve({ code, stderr })),
  );
  cli.stdin!.end(token);
  // The event that proves the vendor runs with the credential: it reached tools/list.
  expect(
    await waitFor(() => existsSync(s.mark) || cli.exitCode !== null, 90_000, 50),
    "the vendor never reached tools/list",
  ).toBe(true);
  expect(cli.exitCode, stderr).toBeNull();
  const { vendor, grandchild } = JSON.parse(readFileSync(s.mark, "utf8")) as { vendor: number; grandchild: number };
  leftovers.push(vendor, grandchild);
  // Both hold the credential, and the grandchild has left the vendor's process group.
  expect(processesReferencing([token]).sort()).toEqual([vendor, grandchild].sort());
  return { cli, exited, pids: [vendor, grandchild] };
}

describe("registry inspect interrupted", () => {
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    it(`${signal} mid-inspect kills the vendor and its detached grandchild before the CLI exits`, async () => {
      const s = setup();
      const token = `rt-canary-${randomBytes(12).toString("hex")}`;
      const { cli, exited, pids } = await stalledInspect(s, token);
      cli.kill(signal);
      const { code, stderr } = await exited;
      expect(code, stderr).toBe(signal === "SIGINT" ? 130 : 143);
      expect(stderr).toContain(`interrupted (${signal})`);
      expect(stderr).not.toContain(token);
      expect(await waitDead(pids, 10_000)).toEqual([]);
      expect(processesReferencing([token])).toEqual([]);
      expect(readdirSync(inspectionsDir(s.dataDir))).toEqual([]);
    });
  }

  it("what a SIGKILLed inspect left running is killed by the next inspect, which leaves nothing of its own", async () => {
    const s = setup();
    const token = `rt-canary-${randomBytes(12).toString("hex")}`;
    const { cli, exited, pids } = await stalledInspect(s, token);
    cli.kill("SIGKILL"); // nothing can catch this one: the leftovers stay until a sweep
    await exited;
    // The vendor may exit on its stdin's end; its detached grandchild, holding the credential, stays.
    expect(isAlive(pids[1]!)).toBe(true);

    const next = await runInProcess(["registry", "inspect", "quick"], s.env, {
      stdin: `other-${randomBytes(6).toString("hex")}`,
    });
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).toMatch(
      /warning: killed [1-9]\d* vendor process\(es\) an interrupted registry inspect left running/,
    );
    expect(next.stdout).toContain("read_thing");
    expect(await waitDead(pids, 10_000)).toEqual([]);
    expect(processesReferencing([token])).toEqual([]);
    expect(readdirSync(inspectionsDir(s.dataDir))).toEqual([]);
  });

  it("what a SIGKILLed inspect left running is killed when serve starts", async () => {
    const s = setup();
    const token = `rt-canary-${randomBytes(12).toString("hex")}`;
    const { cli, exited, pids } = await stalledInspect(s, token);
    cli.kill("SIGKILL");
    await exited;
    expect(isAlive(pids[1]!)).toBe(true);

    const log = memoryLogger();
    const app = await startApp({
      config: testAppConfig(s.dataDir, `host-${randomBytes(16).toString("hex")}`),
      log,
      registry: parseRegistry(s.registry, "test"),
    });
    try {
      expect(await waitDead(pids, 10_000)).toEqual([]);
      expect(processesReferencing([token])).toEqual([]);
      expect(
        log.lines.some((l) => l.includes("killed vendor processes an interrupted registry inspect left running")),
      ).toBe(true);
      expect(readdirSync(inspectionsDir(s.dataDir))).toEqual([]);
    } finally {
      await app.close();
    }
  });
});
