// The login flow against the real server process (`slaude-connect serve`): a browser that fails to
// start must not kill the broker (issue 9, item 8), and the login browsers a SIGKILLed broker left
// behind die when it starts again (item 7). Real Chromium, real WebSocket, processes seen in /proc.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { newId } from "../../src/domain/ids.js";
import { newLinkToken, secretHash } from "../../src/login/links.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { BIN } from "../cli/run.js";
import { type FakeIdp, startFakeIdp } from "../fixtures/idp/fake-idp.js";
import { freePort } from "../support/ports.js";
import {
  descendsFrom,
  envOf,
  isAlive,
  processesReferencing,
  processState,
  waitDead,
  waitFor,
} from "../support/proc.js";
import { until } from "../support/until.js";

const ALICE = "UALICE01";
// Real Chromium on a loaded shared machine: generous bounds, no timed assertions.
vi.setConfig({ testTimeout: 240_000 });
const GUARD_FIXTURE = fileURLToPath(new URL("../fixtures/unhandled-rejection.ts", import.meta.url));

let idp: FakeIdp;
let dir: string;
let key: string;
const servers: Server[] = [];

interface Server {
  readonly proc: ChildProcess;
  readonly url: string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: string;
}

beforeAll(async () => {
  idp = await startFakeIdp({ clients: [] });
});
afterAll(async () => {
  await idp?.close();
});
afterEach(async () => {
  for (const s of servers.splice(0)) if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

function setup(capture: Record<string, unknown>): Record<string, string> {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-loginproc-"));
  key = randomBytes(32).toString("base64");
  const registryPath = path.join(dir, "registry.json");
  const transport = { type: "stdio", command: "true", credentialEnv: { TOKEN: "{{token}}" } };
  writeFileSync(
    registryPath,
    JSON.stringify({ services: { svc: { transport, capture, loginDomains: [new URL(idp.url).host] } } }),
  );
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: path.join(dir, "data"),
    SLAUDE_ENCRYPTION_KEY: key,
    SLAUDE_REGISTRY_PATH: registryPath,
    SLAUDE_LOG_LEVEL: "info",
  };
}

/** Starts `node bin/slaude-connect.js serve` and waits until /healthz answers. */
async function startServer(env: Record<string, string>): Promise<Server> {
  const port = await freePort();
  const proc = spawn(process.execPath, [BIN, "serve"], {
    env: { ...env, PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
    shell: false,
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on("exit", (code, signal) => resolve({ code, signal })),
  );
  const s: Server = { proc, url: `http://127.0.0.1:${port}`, exited, stderr: "" };
  proc.stderr!.setEncoding("utf8").on("data", (d: string) => (s.stderr = (s.stderr + d).slice(-50_000)));
  servers.push(s);
  let dead = false;
  void exited.then(() => (dead = true));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (dead) throw new Error(`server exited during start-up:\n${s.stderr}`);
    if (Date.now() > deadline) throw new Error(`server not ready in 60 s:\n${s.stderr}`);
    if (
      await fetch(`${s.url}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return s;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Mints a link straight into the server's database (as /connect would) and loads its page once. */
async function openLink(s: Server, env: Record<string, string>): Promise<{ sessionId: string; cookie: string }> {
  const { store } = openSqliteStore(path.join(env.SLAUDE_DATA_DIR!, "slaude.db"));
  const token = newLinkToken();
  const id = newId("login");
  const now = Date.now();
  try {
    await store.loginSessions.create(
      {
        id,
        tokenHash: secretHash(KeyRing.fromBase64(key), token),
        teamId: "T1",
        userId: ALICE,
        service: "svc",
        scope: "thread",
        channelId: "C1",
        threadTs: "1700000000.000100",
        createdAt: now,
        expiresAt: now + 600_000,
      },
      [],
    );
  } finally {
    await store.close();
  }
  const res = await fetch(`${s.url}/login/l/${token}`, { redirect: "manual" });
  await res.text();
  expect(res.status).toBe(200);
  return { sessionId: id, cookie: res.headers.get("set-cookie")!.split(";")[0]! };
}

function socket(s: Server, link: { sessionId: string; cookie: string }) {
  const ws = new WebSocket(`${s.url.replace("http", "ws")}/login/ws?s=${encodeURIComponent(link.sessionId)}`, {
    headers: { origin: s.url, cookie: link.cookie },
  });
  const messages: { type: string; state?: string; message?: string }[] = [];
  ws.on("message", (d) => {
    const m = JSON.parse(String(d)) as (typeof messages)[number];
    if (m.type !== "frame") messages.push(m);
  });
  ws.on("error", () => undefined);
  const opened = new Promise<void>((resolve) => ws.once("open", () => resolve()));
  const closed = new Promise<void>((resolve) => ws.once("close", () => resolve()));
  return { ws, messages, opened, closed, send: (m: unknown) => ws.send(JSON.stringify(m)) };
}

/** The shared `until` on `cond`, failing at once with the server's stderr when `s` dies before it holds. */
function untilServer(cond: () => boolean, ms: number, what: string, s: Server): Promise<true> {
  const get = () => {
    if (s.proc.exitCode !== null || s.proc.signalCode !== null)
      throw new Error(
        `the server died (exit ${s.proc.exitCode ?? s.proc.signalCode}) waiting for ${what}:\n${s.stderr.slice(-2_000)}`,
      );
    return cond();
  };
  return until(get, ms, () => `${what}\n${s.stderr}`);
}

/**
 * Every process of the login browsers `serverPid` started, wherever their HOME is: the Chromium
 * processes under it, and the crashpad handlers (reparented to init) that share the browser's HOME.
 */
function loginBrowserProcesses(serverPid: number): number[] {
  const tree = processesReferencing(["/chromium"]).filter((pid) => descendsFrom(pid, serverPid));
  const homes = tree.map((pid) => envOf(pid).HOME).filter((h): h is string => Boolean(h));
  return [...new Set([...tree, ...(homes.length ? processesReferencing(homes) : [])])].sort((a, b) => a - b);
}

/**
 * SIGSTOPs every process of the login browsers and returns the stopped ones. Chromium starts and ends
 * helper processes of its own accord, so one listed a moment earlier may be exiting already: only a
 * process seen stopped (state T) is sure to outlive the broker. Lists again until no new process appears.
 */
async function stopLoginBrowser(serverPid: number): Promise<number[]> {
  const signalled = new Set<number>();
  for (let round = 0; round < 10; round++) {
    const fresh = loginBrowserProcesses(serverPid).filter((pid) => !signalled.has(pid));
    if (fresh.length === 0) break;
    signal(fresh, "SIGSTOP");
    for (const pid of fresh) signalled.add(pid);
  }
  const settled = (pid: number) => !isAlive(pid) || processState(pid) === "T";
  await waitFor(() => [...signalled].every(settled), 5_000);
  return [...signalled].filter((pid) => isAlive(pid) && processState(pid) === "T").sort((a, b) => a - b);
}

function signal(pids: readonly number[], sig: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      // gone
    }
  }
}

describe("a login browser that fails to start (item 8)", () => {
  it("does not kill the server: the viewer is told, the paste form still works, and the process keeps serving", async () => {
    const env = {
      ...setup({
        strategy: "paste",
        instructions: "Paste the token.",
        startUrl: `${idp.url}/login`,
        fields: [{ name: "token", label: "API token" }],
      }),
      SLAUDE_CHROMIUM_PATH: "/nonexistent/chromium",
    };
    const s = await startServer(env);
    const v = socket(s, await openLink(s, env));
    await v.opened;
    v.send({ type: "viewport", width: 800, height: 600 });
    await untilServer(
      () => v.messages.some((m) => m.type === "status" && String(m.message).includes("could not be shown")),
      30_000,
      "the failure told to the viewer",
      s,
    );
    expect(s.proc.exitCode).toBeNull();
    expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
    v.send({ type: "paste", fields: { token: `tok-${randomBytes(6).toString("hex")}` } });
    await untilServer(
      () => v.messages.some((m) => m.type === "status" && m.state === "captured"),
      30_000,
      "paste captured",
      s,
    );
    expect(s.stderr).toContain("login browser failed to start");
    v.ws.close();
  });

  it("an unhandled rejection anywhere is logged, not fatal, once the serve guard is installed (and is fatal without it)", async () => {
    const canary = `canary-${randomBytes(6).toString("hex")}`;
    const run = (guard: string) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ["--import", "tsx", GUARD_FIXTURE], {
          env: { PATH: process.env.PATH ?? "", GUARD: guard, CANARY: canary },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let stdout = "";
        let stderr = "";
        child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
        child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
        child.on("close", (code) => resolve({ code, stdout, stderr }));
      });
    const [guarded, bare] = await Promise.all([run("1"), run("0")]);
    expect(guarded.code).toBe(0);
    expect(guarded.stdout).toContain("still alive");
    expect(guarded.stderr).toContain("unhandled promise rejection");
    expect(guarded.stderr).toContain(canary);
    expect(bare.code).not.toBe(0);
    expect(bare.stdout).not.toContain("still alive");
  });
});

describe("login browsers and the broker's life (item 7)", () => {
  it("survivors of a SIGKILLed broker are killed by the next start; a graceful SIGTERM leaves none", async () => {
    const env = setup({ strategy: "cookie", startUrl: `${idp.url}/login`, requiredCookies: ["idp_session"] });
    const first = await startServer(env);
    const v = socket(first, await openLink(first, env));
    await v.opened;
    v.send({ type: "viewport", width: 800, height: 600 });
    await untilServer(() => v.messages.some((m) => m.state === "waiting"), 60_000, "the login browser up", first);
    // A healthy Chromium exits when its pipe to the broker closes; a hung one does not. Stop every
    // process of the browser (it then reads nothing) so it outlives the broker's SIGKILL, as hung ones do.
    const left = await stopLoginBrowser(first.proc.pid!);
    expect(left.length).toBeGreaterThan(3);
    try {
      first.proc.kill("SIGKILL");
      await first.exited;
      await new Promise((r) => setTimeout(r, 500));
      expect(left.filter(isAlive)).toEqual(left);
      const second = await startServer(env);
      // The sweep runs before the server answers /healthz; the bound only absorbs reaping.
      expect(await waitDead(left, 5_000)).toEqual([]);
      expect(second.stderr).toContain("killed login browser processes left by an earlier run");
      await gracefulStop(second, env);
    } finally {
      signal(left, "SIGKILL"); // a failed run must not leave stopped Chromiums on the machine
    }
  });
});

/** A graceful stop (SIGTERM) with a login browser running exits and takes the browser with it. */
async function gracefulStop(second: Server, env: Record<string, string>): Promise<void> {
  {
    const w = socket(second, await openLink(second, env));
    await w.opened;
    w.send({ type: "viewport", width: 800, height: 600 });
    await untilServer(
      () => w.messages.some((m) => m.state === "waiting"),
      60_000,
      "the second login browser up",
      second,
    );
    const running = loginBrowserProcesses(second.proc.pid!);
    expect(running.length).toBeGreaterThan(0);
    second.proc.kill("SIGTERM");
    const exit = await Promise.race([second.exited, new Promise<"hung">((r) => setTimeout(() => r("hung"), 30_000))]);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(await waitDead(running, 10_000)).toEqual([]);
  }
}
