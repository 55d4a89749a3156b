import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { ThreadRef } from "../../src/domain/thread.js";
import { callHash } from "../../src/policy/args-hash.js";
import { BIN, runBin } from "../cli/run.js";
import { type FakeSlack, type FakeSlackCall, startFakeSlack } from "../fixtures/slack/fake-slack-api.js";
import { fixtureRegistryDoc } from "../integration/broker-harness.js";
import { freePort } from "../support/ports.js";
import { cmdlineOf, descendsFrom, isAlive, processesReferencing, waitDead, waitFor } from "../support/proc.js";

// The real server process (`slaude-connect serve`) killed with SIGKILL in the middle of load
// (brief §10, §11: "broker killed with SIGKILL mid-write", "vendor child crashes, ignores
// SIGTERM"). Its vendor children outlive it (the `stubborn` service ignores SIGTERM and stdin EOF,
// as a badly behaved vendor would); the next start on the same data dir must kill them from the
// child ledger, expire the approval left pending and update its Slack card, and find every call it
// acknowledged in the audit log of an intact database. Then a vendor that crashes on every call is
// restarted each time, and a graceful SIGTERM leaves no process behind, SIGTERM-deaf ones included.

const ALICE = "UALICE01";
const BOB = "UBOB0002";
const LOADERS = [ALICE, "ULOAD002", "ULOAD003"] as const;
const CHANNEL = "C0FAULTS1";
const HOST_TOKEN = `host-token-${randomBytes(16).toString("hex")}`;
const SIGNING_SECRET = `signing-${randomBytes(8).toString("hex")}`;
/** Calls each loader gets answered after the first ten, before the SIGKILL lands mid-flight (about 1.5 s here). */
const LOAD_MORE_CALLS = 40;
const MAX_CALLS_PER_SESSION = 400;

let dir: string;
let dataDir: string;
let fake: FakeSlack;
let env: NodeJS.ProcessEnv;
let teamId: string;
const servers: Server[] = [];

interface Server {
  readonly proc: ChildProcess;
  readonly pid: number;
  readonly url: string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: string;
}

/** Starts the CLI's `serve` (run from the sources: BIN of test/cli/run.ts) on a free port and waits until /healthz answers. */
async function startServer(): Promise<Server> {
  const port = await freePort();
  const proc = spawn(process.execPath, [BIN, "serve"], {
    env: { ...env, PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
    shell: false,
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on("exit", (code, signal) => resolve({ code, signal })),
  );
  const s: Server = { proc, pid: proc.pid!, url: `http://127.0.0.1:${port}`, exited, stderr: "" };
  proc.stderr!.setEncoding("utf8").on("data", (d: string) => (s.stderr = (s.stderr + d).slice(-20_000)));
  servers.push(s);
  let dead = false;
  void exited.then(() => (dead = true));
  const ready = await vi
    .waitFor(
      async () => {
        if (dead) return "exited";
        if (
          !(await fetch(`${s.url}/healthz`).then(
            (r) => r.ok,
            () => false,
          ))
        )
          throw new Error("not ready yet");
        return "ready";
      },
      { timeout: 30_000, interval: 50 },
    )
    .catch(() => "timeout");
  if (ready === "exited") throw new Error(`server exited during start-up:\n${s.stderr}`);
  if (ready === "timeout") throw new Error(`server not ready in 30 s:\n${s.stderr}`);
  return s;
}

/** Live processes that belong to this data dir (environ or argv mention it), minus `except` and its descendants. */
function dataDirProcesses(except?: number): number[] {
  return processesReferencing([dataDir]).filter((p) => except === undefined || !descendsFrom(p, except));
}

const threadOf = (n: number): ThreadRef => ({
  teamId,
  channelId: CHANNEL,
  threadTs: `1700000${String(n).padStart(3, "0")}.000100`,
});

/** A real MCP session over Streamable HTTP, bound to `thread`, as the agent host opens it. */
async function openSession(server: Server, thread: ThreadRef): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: {
      headers: {
        Authorization: `Bearer ${HOST_TOKEN}`,
        "X-Slaude-Thread": `${thread.teamId}/${thread.channelId}/${thread.threadTs}`,
      },
    },
    // A dead server is not coming back on this port: fail the in-flight requests instead of resuming streams.
    reconnectionOptions: {
      maxRetries: 0,
      initialReconnectionDelay: 100,
      maxReconnectionDelay: 100,
      reconnectionDelayGrowFactor: 1,
    },
  });
  const client = new Client({ name: "fault-test-host", version: "1" });
  await client.connect(transport);
  return client;
}

async function reportTurn(server: Server, thread: ThreadRef, user: string): Promise<void> {
  const res = await fetch(`${server.url}/v1/turns`, {
    method: "POST",
    headers: { Authorization: `Bearer ${HOST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      team_id: thread.teamId,
      channel_id: thread.channelId,
      thread_ts: thread.threadTs,
      user_id: user,
    }),
  });
  expect(res.status).toBe(204);
}

async function call(client: Client, service: string, tool: string, args: Record<string, unknown>, onBehalfOf: string) {
  const r = await client.callTool(
    { name: "mcp_call", arguments: { service, tool, args, on_behalf_of: onBehalfOf } },
    undefined,
    { timeout: 60_000 },
  );
  return {
    structured: r.structuredContent as { status: string; code?: string; ranAs?: string },
    text: (r.content as { text?: string }[]).map((c) => c.text ?? "").join("\n"),
  };
}

async function addConnection(owner: string, service: string): Promise<void> {
  const credential = JSON.stringify({
    kind: "fields",
    fields: { token: `canary-${randomBytes(8).toString("hex")}`, user: owner },
  });
  const r = await runBin(
    [
      "connections",
      "add",
      "--team",
      teamId,
      "--service",
      service,
      "--scope",
      "user",
      "--owner",
      owner,
      "--format",
      "json",
    ],
    env,
    { stdin: credential },
  );
  expect(r.code, r.stderr).toBe(0);
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-faults-"));
  dataDir = path.join(dir, "data");
  fake = await startFakeSlack();
  teamId = fake.teamId;
  fake.setMembers(CHANNEL, [...LOADERS, BOB]);
  const doc = fixtureRegistryDoc() as {
    services: { vendor: { transport: Record<string, unknown> } & Record<string, unknown> };
  };
  const vendor = doc.services.vendor;
  // `stubborn`: the same fixture, but it ignores SIGTERM and stdin EOF: it outlives a killed broker.
  const stubborn = { ...vendor, transport: { ...vendor.transport, env: { VENDOR_IGNORE_SIGTERM: "1" } } };
  const registryPath = path.join(dir, "services.json");
  writeFileSync(registryPath, JSON.stringify({ services: { vendor, stubborn } }, null, 2));
  env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: dataDir,
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    SLAUDE_HOST_TOKENS: HOST_TOKEN,
    SLAUDE_REGISTRY_PATH: registryPath,
    SLAUDE_LOG_LEVEL: "info",
    SLACK_BOT_TOKEN: fake.botToken,
    SLACK_SIGNING_SECRET: SIGNING_SECRET,
    SLACK_API_URL: fake.apiUrl,
  };
  // The first add creates and migrates the database; the others may then run side by side.
  await addConnection(ALICE, "stubborn");
  await Promise.all([addConnection(LOADERS[1], "stubborn"), addConnection(LOADERS[2], "stubborn")]);
}, 120_000);

afterAll(async () => {
  for (const s of servers) if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill("SIGKILL");
  // Whatever a failed run left behind: nothing of this data dir may outlive the test file.
  for (const p of processesReferencing([dataDir])) {
    try {
      process.kill(p, "SIGKILL");
    } catch {
      // already gone
    }
  }
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the broker process killed with SIGKILL mid-load, then restarted on the same data dir", () => {
  const acknowledged: { service: string; tool: string; args: Record<string, unknown> }[] = [];
  let survivors: number[] = [];
  let card: { channel: string; ts: string } | undefined;
  let callsAtKill = 0;
  let second: Server;

  it("acknowledges calls from concurrent sessions and holds a borrow waiting for approval until SIGKILL", async () => {
    const first = await startServer();
    // Three loaders, each in their own thread with their own (SIGTERM-deaf) vendor child.
    const sessions = await Promise.all(
      LOADERS.map(async (user, i) => {
        const thread = threadOf(i + 1);
        await reportTurn(first, thread, user);
        return { user, client: await openSession(first, thread) };
      }),
    );
    // BOB borrows ALICE's connection in a fourth thread: ALICE is asked in Slack; the call waits.
    const borrowThread = threadOf(9);
    await reportTurn(first, borrowThread, ALICE);
    await reportTurn(first, borrowThread, BOB);
    const bob = await openSession(first, borrowThread);
    const borrow = call(bob, "stubborn", "read_item", { id: "pending" }, BOB).then(
      (r) => ({ settled: "answered" as const, r }),
      (e: unknown) => ({ settled: "failed" as const, e }),
    );

    let stop = false;
    let errorsBeforeKill = 0;
    const perLoader = LOADERS.map(() => 0);
    const loads = sessions.map(async ({ user, client }, i) => {
      for (let n = 0; n < MAX_CALLS_PER_SESSION && !stop; n++) {
        const c =
          n % 3 === 2
            ? { service: "stubborn", tool: "read_item", args: { id: `s${i}-${n}` } }
            : { service: "stubborn", tool: "echo", args: { text: `s${i}-${n}` } };
        try {
          const r = await call(client, c.service, c.tool, c.args, user);
          if (r.structured.status === "ok") {
            acknowledged.push(c);
            perLoader[i]!++;
          } else if (!stop) errorsBeforeKill++;
        } catch {
          if (!stop) errorsBeforeKill++;
          return;
        }
      }
    });

    // The card reached ALICE's DM and the waiting note the thread (the note is posted after the card is recorded).
    const note = await fake.waitFor(
      "chat.postMessage",
      (c) => c.args.channel === CHANNEL && c.args.thread_ts === borrowThread.threadTs,
      20_000,
    );
    expect(note.response?.ok).toBe(true);
    const cardPost = fake
      .callsOf("chat.postMessage")
      .find((c: FakeSlackCall) => String(c.args.channel).startsWith("D") && Array.isArray(c.args.blocks));
    expect(cardPost?.response?.ok).toBe(true);
    card = { channel: String(cardPost!.response!.channel), ts: String(cardPost!.response!.ts) };

    // Load until every loader has had calls answered, then a little longer, then SIGKILL mid-flight.
    expect(await waitFor(() => perLoader.every((n) => n >= 10), 60_000)).toBe(true);
    const more = perLoader.map((n) => n + LOAD_MORE_CALLS);
    expect(await waitFor(() => perLoader.every((n, i) => n >= more[i]!), 60_000)).toBe(true);
    callsAtKill = fake.calls.length;
    const ackAtKill = acknowledged.length;
    first.proc.kill("SIGKILL");
    stop = true;
    const exit = await first.exited;
    expect(exit.signal).toBe("SIGKILL");
    // Closing the sessions fails whatever request was still in flight when the broker died.
    for (const c of [...sessions.map((x) => x.client), bob]) await c.close().catch(() => {});
    await Promise.all(loads);
    // A response already on its way when the signal landed may still arrive; nothing can come later.
    expect(acknowledged.length).toBeLessThanOrEqual(ackAtKill + LOADERS.length);
    expect(errorsBeforeKill).toBe(0);
    expect((await borrow).settled).toBe("failed");

    // The SIGTERM-deaf vendor children outlived their broker: the restart has real work to do.
    survivors = dataDirProcesses();
    const vendors = survivors.filter((p) => cmdlineOf(p).includes("vendor-stdio"));
    expect(vendors.length).toBe(LOADERS.length);
    console.log(
      `crash: ${acknowledged.length} calls acknowledged before SIGKILL; ${survivors.length} orphaned processes (${vendors.length} vendors)`,
    );
  }, 120_000);

  it("the restart kills every orphaned vendor from the ledger and expires the pending approval, updating its card", async () => {
    expect(survivors.length).toBeGreaterThan(0);
    second = await startServer();
    // Ready means the ledger sweep already ran: nothing of the first run is left.
    expect(await waitDead(survivors, 2_000)).toEqual([]);
    expect(dataDirProcesses(second.pid)).toEqual([]);

    // The abandoned approval's card is updated in place by the new process.
    expect(card).toBeDefined();
    const update = await fake.waitFor(
      "chat.update",
      (c) => c.args.channel === card!.channel && c.args.ts === card!.ts,
      10_000,
    );
    expect(fake.calls.indexOf(update)).toBeGreaterThanOrEqual(callsAtKill);
    expect(update.response?.ok).toBe(true);
  }, 120_000);

  it("a vendor that crashes on every call is reported each time and restarted; a SIGTERM-deaf one dies with a graceful shutdown", async () => {
    const thread = threadOf(1);
    await reportTurn(second, thread, ALICE);
    const client = await openSession(second, thread);
    for (let i = 0; i < 5; i++) {
      const r = await call(client, "stubborn", "crash", {}, ALICE);
      expect(r.structured.code, JSON.stringify(r.structured)).toBe("vendor_crashed");
    }
    const ok = await call(client, "stubborn", "echo", { text: "alive after 5 crashes" }, ALICE);
    expect(ok.structured).toMatchObject({ status: "ok", ranAs: "own" });
    expect(ok.text).toContain("alive after 5 crashes");
    await client.close().catch(() => {});

    // That vendor ignores SIGTERM and stdin EOF; it is alive right now, a child of this broker…
    const children = dataDirProcesses().filter((p) => p !== second.pid && descendsFrom(p, second.pid));
    expect(children.filter((p) => cmdlineOf(p).includes("vendor-stdio")).length).toBe(1);

    // …and after a graceful SIGTERM of the broker nothing of this data dir is left.
    second.proc.kill("SIGTERM");
    const exit = await Promise.race([
      second.exited,
      new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 20_000)),
    ]);
    expect(exit, second.stderr).toEqual({ code: 0, signal: null });
    expect(await waitDead(children, 2_000)).toEqual([]);
    expect(await waitFor(() => dataDirProcesses().length === 0, 2_000)).toBe(true);
    expect(children.some(isAlive)).toBe(false);
  }, 120_000);

  it("the database is intact, the approval expired, and every acknowledged call has its audit row", async () => {
    const db = new Database(path.join(dataDir, "slaude.db"), { readonly: true, fileMustExist: true });
    try {
      expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
      const approvals = db.prepare("SELECT status, card_channel, card_ts FROM approvals").all() as {
        status: string;
        card_channel: string;
        card_ts: string;
      }[];
      expect(approvals).toEqual([{ status: "expired", card_channel: card!.channel, card_ts: card!.ts }]);
    } finally {
      db.close();
    }
    const audit = await runBin(["audit", "--jsonl"], env);
    expect(audit.code, audit.stderr).toBe(0);
    const rows = audit.stdout
      .trim()
      .split("\n")
      .map(
        (l) =>
          JSON.parse(l) as {
            event: string;
            argsHash?: string | null;
            decision?: string | null;
            errorCode?: string | null;
          },
      );
    const calls = rows.filter((r) => r.event === "call");
    expect(calls.length).toBeGreaterThanOrEqual(acknowledged.length);
    const hashes = new Set(calls.map((r) => r.argsHash));
    const missing = acknowledged.filter((c) => !hashes.has(callHash(c.service, c.tool, c.args)));
    expect(missing).toEqual([]);
    expect(rows.some((r) => r.event === "approval_decided" && r.decision === "expired")).toBe(true);
    console.log(
      `audit: ${calls.length} call rows for ${acknowledged.length} acknowledged calls; ${rows.length} rows in all`,
    );
  }, 120_000);
});
