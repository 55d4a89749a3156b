// When the replica holding a login dies (issue 14, item 2 "Login"): a real `slaude-connect serve`
// process opens the link and is killed with SIGKILL; the viewer's next page load on the other
// replica finds it stopped (its liveness lock is free in PostgreSQL), takes the flow over, and the
// same viewer finishes the login there. A holder that is running but cannot be reached is never
// taken over: the viewer gets a clear page and the holder stays as recorded.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { PostgresStore } from "../../src/store/postgres/pg-store.js";
import { PostgresTopology } from "../../src/topology/postgres/postgres-topology.js";
import { BIN } from "../cli/run.js";
import { freePort } from "../support/ports.js";
import { type PgCluster, startPostgres } from "../support/postgres.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 120_000 });
const ALICE = "UALICE01";
const THREAD = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };
const REGISTRY = {
  services: {
    pastesvc: {
      transport: { type: "stdio", command: "true", credentialEnv: { TOKEN: "{{token}}" } },
      capture: { strategy: "paste", instructions: "Paste it.", fields: [{ name: "token", label: "API token" }] },
      scopes: ["thread", "user"],
    },
  },
};

let cluster: PgCluster;
let root: string;
let child: ChildProcess | undefined;
let b: RunningApp | undefined;
let log: ReturnType<typeof memoryLogger>;

beforeAll(async () => {
  cluster = await startPostgres();
  root = mkdtempSync(path.join(os.tmpdir(), "slaude-holder-death-"));
});
afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await b?.close();
  await cluster?.stop();
  rmSync(root, { recursive: true, force: true });
});

function env(databaseUrl: string, keyB64: string, name: string): Record<string, string> {
  const dataDir = path.join(root, name);
  const registryPath = path.join(root, "services.json");
  writeFileSync(registryPath, JSON.stringify(REGISTRY));
  return {
    NODE_ENV: "test",
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    SLAUDE_DATA_DIR: dataDir,
    SLAUDE_DATABASE_URL: databaseUrl,
    SLAUDE_ENCRYPTION_KEY: keyB64,
    SLAUDE_REGISTRY_PATH: registryPath,
    SLAUDE_WORKSPACE: "none",
    SLAUDE_LOG_LEVEL: "warn",
  };
}

async function inProcessReplica(databaseUrl: string, keyB64: string): Promise<RunningApp> {
  log = memoryLogger("debug");
  return startApp({
    config: loadConfig({ ...env(databaseUrl, keyB64, "b"), PORT: "0" }),
    registry: parseRegistry(REGISTRY, "test"),
    log,
  });
}

/** Starts `slaude-connect serve` (from the sources) on a free port and waits until it answers. */
async function serveReplica(
  databaseUrl: string,
  keyB64: string,
): Promise<{ proc: ChildProcess; url: string; stderr: () => string }> {
  const port = await freePort();
  const proc = spawn(process.execPath, [BIN, "serve"], {
    env: { ...env(databaseUrl, keyB64, "a"), PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
    shell: false,
  });
  let stderr = "";
  proc.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr = (stderr + d).slice(-20_000)));
  const url = `http://127.0.0.1:${port}`;
  await vi.waitFor(
    async () => {
      if (proc.exitCode !== null) throw new Error(`serve exited: ${stderr}`);
      if (
        !(await fetch(`${url}/healthz`).then(
          (r) => r.ok,
          () => false,
        ))
      )
        throw new Error("not ready yet");
    },
    { timeout: 60_000, interval: 100 },
  );
  return { proc, url, stderr: () => stderr };
}

async function load(
  base: string,
  linkUrl: string,
  cookie?: string,
): Promise<{ status: number; text: string; cookie: string | undefined }> {
  const res = await fetch(`${base}${new URL(linkUrl).pathname}`, {
    headers: cookie ? { cookie } : {},
    redirect: "manual",
  });
  return { status: res.status, text: await res.text(), cookie: res.headers.get("set-cookie")?.split(";")[0] };
}

function holders(a: RunningApp): PostgresTopology["loginHolders"] {
  expect(a.store).toBeInstanceOf(PostgresStore);
  return new PostgresTopology((a.store as PostgresStore).db).loginHolders;
}

describe("the holder of a login dies", () => {
  it("SIGKILL of the holder: the viewer's reload on another replica takes the flow over and the login completes there", async () => {
    const keyB64 = randomBytes(32).toString("base64");
    const databaseUrl = await cluster.createDatabase();
    b = await inProcessReplica(databaseUrl, keyB64);
    const a = await serveReplica(databaseUrl, keyB64);
    child = a.proc;
    const link = await b.logins.mint({ ...THREAD, userId: ALICE, service: "pastesvc" });
    const opened = await load(a.url, link.url);
    expect(opened.status).toBe(200);
    const cookie = opened.cookie!;
    expect(await holders(b).holderOf(link.sessionId)).toBe(a.url);
    // While A runs, B forwards the viewer's page to it.
    const forwarded = await load(b.url, link.url, cookie);
    expect(forwarded.status).toBe(200);
    expect(forwarded.text).toContain(link.sessionId);
    expect(b.logins.activeFlows).toBe(0);

    const exited = new Promise((r) => a.proc.once("exit", r));
    a.proc.kill("SIGKILL");
    await exited;
    // The first reloads may find A's database connection not yet closed: a clear "unavailable"
    // page, never anything else; then B takes the flow over and serves it.
    const seen: number[] = [];
    const page = await vi.waitFor(
      async () => {
        const r = await load(b!.url, link.url, cookie);
        seen.push(r.status);
        if (r.status === 503) expect(r.text).toContain("Reload this page in a minute");
        if (r.status !== 200) throw new Error(`status ${r.status}`);
        return r;
      },
      { timeout: 30_000, interval: 200 },
    );
    expect(
      seen.every((s) => s === 200 || s === 503),
      String(seen),
    ).toBe(true);
    expect(page.text).toContain(link.sessionId);
    expect(await holders(b).holderOf(link.sessionId)).toBe(new URL(b.url).origin);
    expect(b.logins.activeFlows).toBe(1);
    expect(log.lines.join("\n")).toContain("login taken over from a stopped replica");
    // Someone else with the link cannot reopen it: links work once, for their viewer.
    expect((await load(b.url, link.url)).status).toBe(410);

    // The same viewer finishes the login on B.
    const ws = new WebSocket(`${b.url.replace("http", "ws")}/login/ws?s=${encodeURIComponent(link.sessionId)}`, {
      headers: { origin: b.url, cookie },
    });
    ws.on("error", () => undefined);
    await new Promise((r) => ws.once("open", r));
    ws.send(JSON.stringify({ type: "viewport", width: 1024, height: 768 }));
    ws.send(JSON.stringify({ type: "paste", fields: { token: `tok-${randomBytes(6).toString("hex")}` } }));
    const conn = await vi.waitFor(
      async () => {
        const [c] = await b!.store.connections.list({ service: "pastesvc" });
        if (!c) throw new Error("not stored yet");
        return c;
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(conn).toMatchObject({ ownerUserId: ALICE, scope: "thread", status: "active" });
    expect((await b.store.loginSessions.get(link.sessionId))?.status).toBe("completed");
    ws.close();
  });

  it("a holder that is running but unreachable is not taken over: the viewer is told to reload later", async () => {
    const keyB64 = randomBytes(32).toString("base64");
    const databaseUrl = await cluster.createDatabase();
    await b?.close();
    b = await inProcessReplica(databaseUrl, keyB64);
    const link = await b.logins.mint({ ...THREAD, userId: ALICE, service: "pastesvc" });
    const opened = await load(b.url, link.url);
    expect(opened.status).toBe(200);
    // A replica that holds its liveness lock, at an address nothing answers on.
    const gone = `http://127.0.0.1:${await freePort()}`;
    const mark = await holders(b).hold(gone, () => {});
    expect(mark).toBeDefined();
    try {
      expect(await holders(b).takeOver(link.sessionId, new URL(b.url).origin, gone)).toBe(true);
      const r = await load(b.url, link.url, opened.cookie);
      expect(r.status).toBe(503);
      expect(r.text).toContain("cannot be reached right now");
      expect(await holders(b).holderOf(link.sessionId)).toBe(gone);
    } finally {
      await mark!.release();
    }
  });
});
