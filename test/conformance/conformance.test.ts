import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { ALICE, fixtureRegistryDoc, THREAD } from "../integration/broker-harness.js";

// The MCP conformance suite's server scenarios against the real app's /mcp.
//
// The suite (0.1.13) has no option for request headers, and /mcp needs two: the host's bearer
// token and X-Slaude-Thread on initialize. So a small reverse proxy on 127.0.0.1 plays the host:
// it adds exactly those two headers to every request and forwards everything else unchanged, Host
// and Origin included, so the app itself still judges DNS rebinding. The app's public URL is the
// proxy's address, which is where the suite reaches it.

const CONFORMANCE_BIN = fileURLToPath(
  new URL("../../node_modules/@modelcontextprotocol/conformance/dist/index.js", import.meta.url),
);
const HOST_TOKEN = `host-${randomBytes(12).toString("hex")}`;
const THREAD_HEADER = `${THREAD.teamId}/${THREAD.channelId}/${THREAD.threadTs}`;

interface Baseline {
  readonly expectedFailures: Record<string, string>;
  readonly knownGaps?: Record<string, string>;
  readonly vacuousPasses: Record<string, string>;
}
const baseline = JSON.parse(readFileSync(new URL("./baseline.json", import.meta.url), "utf8")) as Baseline;

interface Check {
  readonly id: string;
  readonly status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED";
  readonly errorMessage?: string;
}

let dir: string;
let app: RunningApp;
let proxy: http.Server;
let proxyUrl: string;
let forwarded = 0;

/** The host's side of the connection: adds the bearer token and the thread, forwards the rest as is. */
function startHostProxy(target: () => number): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    forwarded++;
    const upstream = http.request(
      {
        host: "127.0.0.1",
        port: target(),
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization: `Bearer ${HOST_TOKEN}`, "x-slaude-thread": THREAD_HEADER },
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        // SSE responses stream: pipe, never buffer.
        up.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/** Runs the conformance CLI as a child (async: the app under test shares this event loop). */
function runSuite(args: string[], timeoutMs = 45_000): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CONFORMANCE_BIN, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH ?? "", NO_COLOR: "1" },
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-conformance-"));
  let appPort = 0;
  proxy = await startHostProxy(() => appPort);
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  app = await startApp({
    config: loadConfig({
      NODE_ENV: "test",
      SLAUDE_DATA_DIR: dir,
      PORT: "0",
      SLAUDE_HOST_TOKENS: HOST_TOKEN,
      SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      SLAUDE_PUBLIC_URL: proxyUrl,
      PATH: process.env.PATH ?? "/usr/bin:/bin",
    }),
    log: memoryLogger("warn"),
    membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE),
    registry: parseRegistry(fixtureRegistryDoc(), "conformance-registry"),
  });
  appPort = app.port;
});

afterAll(async () => {
  await app?.close();
  await new Promise<void>((r) => (proxy ? proxy.close(() => r()) : r()));
  rmSync(dir, { recursive: true, force: true });
});

describe("MCP conformance (server scenarios)", () => {
  it("the app refuses the suite's requests without the host's headers (the proxy is what authenticates)", async () => {
    const init = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } },
    });
    const direct = await fetch(`${app.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: init,
    });
    expect(direct.status).toBe(401);
    const noThread = await fetch(`${app.url}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${HOST_TOKEN}`,
      },
      body: init,
    });
    expect(noThread.status).toBe(400);
  });

  it("passes every scenario except the baselined ones, and every baselined one still fails", async () => {
    const listed = await runSuite(["list", "--server"]);
    expect(listed.code).toBe(0);
    const scenarios = listed.output
      .split("\n")
      .map((l) => /^\s+- (\S+)$/.exec(l)?.[1])
      .filter((s): s is string => s !== undefined);
    expect(scenarios.length).toBeGreaterThan(20);
    const expected = new Map<string, string>([
      ...Object.entries(baseline.expectedFailures),
      ...Object.entries(baseline.knownGaps ?? {}),
    ]);
    // A baseline entry naming no scenario is a typo that would hide nothing and mean nothing.
    expect([...expected.keys(), ...Object.keys(baseline.vacuousPasses)].filter((s) => !scenarios.includes(s))).toEqual(
      [],
    );

    const out = path.join(dir, "results");
    const before = forwarded;
    const run = await runSuite(["server", "--url", `${proxyUrl}/mcp`, "--suite", "all", "-o", out]);
    expect(forwarded - before, run.output.slice(-2000)).toBeGreaterThan(scenarios.length);

    // Results land in <out>/server-<scenario>-<ISO timestamp>/checks.json.
    const results = new Map<string, Check[]>();
    for (const d of readdirSync(out)) {
      const name = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(d)?.[1];
      if (name) results.set(name, JSON.parse(readFileSync(path.join(out, d, "checks.json"), "utf8")) as Check[]);
    }
    expect([...results.keys()].sort(), "every scenario produced results").toEqual([...scenarios].sort());

    const rows: string[] = [];
    const unexpected: string[] = [];
    const stale: string[] = [];
    for (const s of scenarios) {
      const checks = results.get(s)!;
      const failures = checks.filter((c) => c.status === "FAILURE");
      const warnings = checks.filter((c) => c.status === "WARNING");
      const passed = checks.filter((c) => c.status === "SUCCESS").length;
      // The suite's own baseline rule: a FAILURE or a WARNING fails the scenario.
      const failed = failures.length > 0 || warnings.length > 0 || checks.length === 0;
      const baselined = expected.has(s);
      const verdict = failed
        ? baselined
          ? s in (baseline.knownGaps ?? {})
            ? "FAIL (known gap)"
            : "FAIL (baseline)"
          : "FAIL (UNEXPECTED)"
        : baselined
          ? "PASS (STALE BASELINE)"
          : "pass";
      if (failed && !baselined) unexpected.push(s);
      if (!failed && baselined) stale.push(s);
      const first = [...failures, ...warnings][0];
      const note = first
        ? `${first.id}: ${(first.errorMessage ?? "").slice(0, 110)}`
        : s in baseline.vacuousPasses
          ? "(vacuous, see baseline.vacuousPasses)"
          : "";
      rows.push(
        `  ${s.padEnd(31)} ${verdict.padEnd(21)} ${String(passed).padStart(2)} ok ${String(failures.length).padStart(2)} fail ${String(warnings.length).padStart(2)} warn  ${note}`,
      );
    }
    const passing = scenarios.filter((s) => !expected.has(s) && !unexpected.includes(s));
    console.log(
      [
        `conformance 0.1.13 against ${proxyUrl}/mcp (host proxy adds Authorization + X-Slaude-Thread), ${scenarios.length} scenarios`,
        ...rows,
        `  passed ${passing.length}: ${passing.join(", ")}`,
        `  baselined ${expected.size} (${Object.keys(baseline.expectedFailures).length} need the suite's fixtures, ${Object.keys(baseline.knownGaps ?? {}).length} known gap: ${Object.keys(baseline.knownGaps ?? {}).join(", ")})`,
      ].join("\n"),
    );
    expect(unexpected, "scenarios failing that are not in baseline.json").toEqual([]);
    expect(stale, "baselined scenarios that now pass: remove them from baseline.json").toEqual([]);
    // The CLI's own verdict agrees (it exits 1 when any check is a FAILURE), so it really ran to the end.
    const anyFailure = [...results.values()].some((checks) => checks.some((c) => c.status === "FAILURE"));
    expect(run.code, run.output.slice(-2000)).toBe(anyFailure ? 1 : 0);
  });
});
