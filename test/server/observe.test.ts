import { executionAsyncId } from "node:async_hooks";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import { type AppOptions, type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { type FakeSlack, startFakeSlack } from "../fixtures/slack/fake-slack-api.js";
import { ALICE, BOB, fixtureRegistryDoc, mcpCall, THREAD } from "../integration/broker-harness.js";
import { until } from "../support/until.js";

// Issue 12 item 5, observed from outside: the real app (SQLite, vault, pool, the fixture vendor as
// real children) behind its HTTP server, real SDK clients over Streamable HTTP on /mcp, and a
// real Prometheus scrape of /metrics; /readyz against real Bolt and the fake Slack API.

const HOST_TOKEN = `host-${randomBytes(8).toString("hex")}`;
const METRICS_TOKEN = `metrics-${randomBytes(12).toString("hex")}`;
const THREAD_HEADER = `${THREAD.teamId}/${THREAD.channelId}/${THREAD.threadTs}`;

const dirs: string[] = [];
const apps: RunningApp[] = [];
const clients: Client[] = [];
const fakes: FakeSlack[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => {});
  for (const a of apps.splice(0)) await a.close();
  for (const f of fakes.splice(0)) await f.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function boot(env: Record<string, string> = {}, opts: Partial<AppOptions> = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-observe-"));
  dirs.push(dir);
  const log = memoryLogger("debug");
  const config = loadConfig({
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: dir,
    PORT: "0",
    SLAUDE_HOST_TOKENS: HOST_TOKEN,
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    ...env,
  });
  const app = await startApp({
    config,
    log,
    membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE, BOB),
    registry: parseRegistry(fixtureRegistryDoc(), "test"),
    ...opts,
  });
  apps.push(app);
  return { app, log };
}

async function client(app: RunningApp, headers: Record<string, string> = {}): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${HOST_TOKEN}`, "X-Slaude-Thread": THREAD_HEADER, ...headers } },
  });
  const c = new Client({ name: "observe-test", version: "1" });
  await c.connect(transport);
  clients.push(c);
  return c;
}

async function turn(app: RunningApp, user: string): Promise<void> {
  const r = await fetch(`${app.url}/v1/turns`, {
    method: "POST",
    headers: { authorization: `Bearer ${HOST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({
      team_id: THREAD.teamId,
      channel_id: THREAD.channelId,
      thread_ts: THREAD.threadTs,
      user_id: user,
    }),
  });
  expect(r.status).toBe(204);
}

async function connect(app: RunningApp, owner: string | null, token: string) {
  return app.lifecycle.create({
    teamId: THREAD.teamId,
    ownerUserId: owner,
    service: "vendor",
    scope: owner ? "thread" : "shared",
    channelId: owner ? THREAD.channelId : null,
    threadTs: owner ? THREAD.threadTs : null,
    credential: { kind: "fields", fields: { token, user: owner ?? "shared-bot" } },
    createdBy: owner ?? "cli:test",
  });
}

/** Scrapes /metrics with `token` as the bearer (null: no Authorization header). */
function scrape(app: RunningApp, token: string | null = METRICS_TOKEN) {
  return fetch(`${app.url}/metrics`, token !== null ? { headers: { authorization: `Bearer ${token}` } } : {});
}

/** The value of one exposition line, e.g. `slaude_calls_total{service="vendor",...}`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("GET /metrics", () => {
  it("after real calls over /mcp shows them by service, tool, outcome and how they ran, with vendor and broker time apart", async () => {
    const { app } = await boot({ SLAUDE_METRICS_TOKEN: METRICS_TOKEN });
    const aliceToken = `canary-alice-${randomBytes(10).toString("hex")}`;
    const sharedToken = `canary-shared-${randomBytes(10).toString("hex")}`;
    await connect(app, ALICE, aliceToken);
    await connect(app, null, sharedToken);
    const c = await client(app);
    const inventedTool = `canary_tool_${randomBytes(6).toString("hex")}`;
    const inventedService = `canary_service_${randomBytes(6).toString("hex")}`;

    await turn(app, ALICE);
    expect((await mcpCall(c, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE })).structured.ranAs).toBe(
      "own",
    );
    expect((await mcpCall(c, { tool: "read_item", args: { id: "2" }, on_behalf_of: ALICE })).structured.ranAs).toBe(
      "own",
    );
    expect((await mcpCall(c, { tool: inventedTool, args: {}, on_behalf_of: ALICE })).isError).toBe(true);
    expect(
      (await mcpCall(c, { service: inventedService, tool: "read_item", args: {}, on_behalf_of: ALICE })).structured
        .code,
    ).toBe("unknown_service");
    await turn(app, BOB);
    expect((await mcpCall(c, { tool: "search_shared", args: { q: "x" }, on_behalf_of: BOB })).structured.ranAs).toBe(
      "shared",
    );

    const res = await scrape(app);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = await res.text();
    expect(sample(text, 'slaude_calls_total{service="vendor",tool="read_item",outcome="ok",via="own"}')).toBe(2);
    // The fixture vendor does not implement search_shared: it ran on the shared identity and the vendor said no.
    expect(
      sample(
        text,
        'slaude_calls_total{service="vendor",tool="search_shared",outcome="vendor_tool_error",via="shared"}',
      ),
    ).toBe(1);
    expect(
      sample(text, 'slaude_calls_total{service="vendor",tool="other",outcome="vendor_tool_error",via="own"}'),
    ).toBe(1);
    expect(
      sample(text, 'slaude_calls_total{service="unknown",tool="other",outcome="unknown_service",via="none"}'),
    ).toBe(1);
    // Four calls reached a vendor; the refused one has broker time only.
    expect(sample(text, 'slaude_call_vendor_seconds_count{service="vendor"}')).toBe(4);
    expect(sample(text, 'slaude_call_broker_seconds_count{service="vendor"}')).toBe(4);
    expect(sample(text, 'slaude_call_broker_seconds_count{service="unknown"}')).toBe(1);
    expect(sample(text, 'slaude_call_vendor_seconds_count{service="unknown"}')).toBeUndefined();
    // Two children (Alice's and the shared identity's) are alive and idle.
    expect(sample(text, 'slaude_vendors{state="live"}')).toBe(2);
    expect(sample(text, 'slaude_vendors{state="leased"}')).toBe(0);
    expect(sample(text, "slaude_vendor_starts")).toBe(2);
    expect(sample(text, "slaude_approvals_pending")).toBe(0);
    expect(sample(text, 'slaude_logins{kind="flows"}')).toBe(0);
    expect(sample(text, 'slaude_logins{kind="browsers"}')).toBe(0);
    expect(sample(text, 'slaude_job_runs_total{job="ttl_reaper",outcome="ok"}')).toBeGreaterThanOrEqual(1);
    for (const name of [
      "slaude_pool_waits_total",
      "slaude_approval_decision_seconds",
      "slaude_audit_write_failures_total",
    ])
      expect(text).toContain(`# TYPE ${name}`);

    // Canary: no credential, user id, thread, channel, token or model-invented name is a label or value.
    for (const secret of [
      aliceToken,
      sharedToken,
      ALICE,
      BOB,
      THREAD.threadTs,
      THREAD.channelId,
      THREAD.teamId,
      HOST_TOKEN,
      METRICS_TOKEN,
      inventedTool,
      inventedService,
      "shared-bot",
    ]) {
      expect(text, secret).not.toContain(secret);
    }
  });

  it("is refused without the metrics token, with a wrong one, with the host token, from a foreign Host, and entirely when no token is configured", async () => {
    const { app } = await boot({ SLAUDE_METRICS_TOKEN: METRICS_TOKEN });
    expect((await scrape(app, null)).status).toBe(401);
    expect((await scrape(app, `${METRICS_TOKEN}x`)).status).toBe(401);
    expect((await scrape(app, HOST_TOKEN)).status).toBe(401);
    const foreign = await fetch(`${app.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}`, origin: "https://evil.example" },
    });
    expect(foreign.status).toBe(403);
    const body = await (await scrape(app, `${METRICS_TOKEN}x`)).text();
    expect(body).not.toContain("slaude_");

    const { app: closed } = await boot();
    const r = await scrape(closed, METRICS_TOKEN);
    expect(r.status).toBe(403);
    expect(await r.json()).toMatchObject({ error: "metrics_disabled" });
    expect((await scrape(closed, HOST_TOKEN)).status).toBe(403);
  });
});

describe("GET /readyz", () => {
  it("flips with Slack's auth.test and the database, while /healthz stays a liveness check", async () => {
    const fake = await startFakeSlack({ admins: [] });
    fakes.push(fake);
    fake.setFailing("auth.test", "invalid_auth");
    const { app } = await boot(
      {
        SLACK_BOT_TOKEN: fake.botToken,
        SLACK_SIGNING_SECRET: `signing-${randomBytes(8).toString("hex")}`,
        SLACK_API_URL: fake.apiUrl,
      },
      { slackAuthCheckIntervalMs: 50 },
    );
    const readyz = async () => {
      const r = await fetch(`${app.url}/readyz`);
      return { status: r.status, body: (await r.json()) as Record<string, unknown> & { slack?: string } };
    };
    const failed = await until(async () => {
      const r = await readyz();
      return r.body.slack?.startsWith("failed") ? r : undefined;
    });
    expect(failed.status).toBe(503);
    // The installations' health is detail: the token could not be recorded, so none is active yet.
    expect(failed.body).toEqual({
      status: "not_ready",
      database: "ok",
      registry: "ok",
      slack: "failed: invalid_auth",
      installations: { active: 0, disabled: [] },
    });
    expect(JSON.stringify(failed.body)).not.toContain(fake.botToken);
    expect((await fetch(`${app.url}/healthz`)).status).toBe(200);

    fake.clearFailing("auth.test");
    const ready = await until(async () => {
      const r = await readyz();
      return r.status === 200 ? r : undefined;
    });
    expect(ready.body).toEqual({
      status: "ready",
      database: "ok",
      registry: "ok",
      slack: "ok",
      installations: { active: 1, disabled: [] },
    });

    await app.store.close();
    const down = await readyz();
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ status: "not_ready", database: "unavailable" });
  });

  it("is ready without Slack when Slack is not configured, and not ready with an empty registry", async () => {
    const { app } = await boot();
    const r = await fetch(`${app.url}/readyz`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: "ready", database: "ok", registry: "ok", slack: "not configured" });

    const { app: empty } = await boot({}, { registry: parseRegistry({ services: {} }, "empty") });
    const e = await fetch(`${empty.url}/readyz`);
    expect(e.status).toBe(503);
    expect(await e.json()).toMatchObject({ status: "not_ready", registry: "no services loaded" });
  });
});

describe("request ids and call ids", () => {
  it("echoes a safe X-Request-Id, replaces an unsafe one, and generates one when absent", async () => {
    const { app } = await boot();
    const mine = await fetch(`${app.url}/healthz`, { headers: { "x-request-id": "lb-7f3a.2:9" } });
    expect(mine.headers.get("x-request-id")).toBe("lb-7f3a.2:9");
    for (const bad of ["has space", "a".repeat(65), 'quote"d', "<script>"]) {
      const r = await fetch(`${app.url}/nope`, { headers: { "x-request-id": bad } });
      expect(r.status).toBe(404);
      const id = r.headers.get("x-request-id");
      expect(id).not.toBe(bad);
      expect(id).toMatch(/^[A-Za-z0-9_-]{16}$/);
    }
    const a = (await fetch(`${app.url}/healthz`)).headers.get("x-request-id");
    const b = (await fetch(`${app.url}/healthz`)).headers.get("x-request-id");
    expect(a).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(a).not.toBe(b);
  });

  it("a tool call's log lines carry its request id and its call id, and its audit rows carry the same call id", async () => {
    const { app, log } = await boot();
    await connect(app, ALICE, `canary-${randomBytes(8).toString("hex")}`);
    const c = await client(app, { "X-Request-Id": "req-observe-1" });
    await turn(app, ALICE);
    const ok = await mcpCall(c, { tool: "read_item", args: { id: "9" }, on_behalf_of: ALICE });
    expect(ok.structured.status).toBe("ok");
    const denied = await mcpCall(c, { tool: "read_item", args: { id: "9" }, on_behalf_of: BOB });
    expect(denied.structured.code).toBe("on_behalf_of_mismatch");

    const lines = log.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const done = lines.filter((l) => l.msg === "mcp_call done");
    expect(done.map((l) => l.outcome)).toEqual(["ok", "on_behalf_of_mismatch"]);
    for (const d of done) {
      expect(d.requestId).toBe("req-observe-1");
      expect(d.callId).toMatch(/^call_/);
    }
    const [okLine, deniedLine] = done;
    expect(okLine!.callId).not.toBe(deniedLine!.callId);
    // Every line that names the call carries the request id too.
    const ofCall = lines.filter((l) => l.callId === okLine!.callId);
    for (const l of ofCall) expect(l.requestId).toBe("req-observe-1");

    const okRows = await app.store.audit.query({ callId: String(okLine!.callId) });
    expect(okRows.map((r) => r.event)).toEqual(["call_started", "call"]);
    const deniedRows = await app.store.audit.query({ callId: String(deniedLine!.callId) });
    expect(deniedRows.map((r) => r.event)).toEqual(["call_denied"]);
  });

  it("two concurrent calls from two requests never get each other's ids, and no line of a call lacks its ids", async () => {
    const { app, log } = await boot();
    await connect(app, ALICE, `canary-${randomBytes(8).toString("hex")}`);
    const a = await client(app, { "X-Request-Id": "req-concurrent-a" });
    const b = await client(app, { "X-Request-Id": "req-concurrent-b" });
    await turn(app, ALICE);
    // Warm the vendor first, so both calls below overlap on the same running child.
    expect((await mcpCall(a, { tool: "read_item", args: { id: "1" }, on_behalf_of: ALICE })).structured.status).toBe(
      "ok",
    );
    const from = log.lines.length;
    const [ra, rb] = await Promise.all([
      mcpCall(a, { tool: "read_item", args: { id: "2" }, on_behalf_of: ALICE }),
      mcpCall(b, { tool: "fail_with_token", args: {}, on_behalf_of: ALICE }),
    ]);
    expect(ra.structured.status).toBe("ok");
    expect(rb.structured.status).toBe("ok");
    const lines = log.lines.slice(from).map((l) => JSON.parse(l) as Record<string, unknown>);
    const done = lines.filter((l) => l.msg === "mcp_call done");
    expect(done).toHaveLength(2);
    const idOf = new Map(done.map((d) => [d.requestId, d.callId]));
    expect([...idOf.keys()].sort()).toEqual(["req-concurrent-a", "req-concurrent-b"]);
    expect(idOf.get("req-concurrent-a")).not.toBe(idOf.get("req-concurrent-b"));
    // Every line naming one of the calls names its request, and the other way round.
    for (const l of lines.filter((x) => x.callId !== undefined || x.requestId !== undefined))
      expect(idOf.get(l.requestId)).toBe(l.callId);
    expect(done.find((d) => d.requestId === "req-concurrent-b")!.outcome).toBe("vendor_tool_error");
    // After warm calls through the real server, no promise hook is on: a promise reaction runs with
    // no async id (with an AsyncLocalStorage in use, as before, it has one).
    const reactionId = await new Promise<number>((resolve) =>
      setImmediate(() => void Promise.resolve().then(() => resolve(executionAsyncId()))),
    );
    expect(reactionId).toBe(0);
  });

  it("a refusal deep in the call (the call_started row not written) logs with the request id and the call id", async () => {
    const { app, log } = await boot();
    await connect(app, ALICE, `canary-${randomBytes(8).toString("hex")}`);
    const c = await client(app, { "X-Request-Id": "req-deep-1" });
    await turn(app, ALICE);
    // The audit table goes read-only under the call: its write-ahead row fails, the call is refused.
    const audit = app.store.audit;
    const append = audit.append.bind(audit);
    audit.append = async () => {
      throw Object.assign(new Error("disk full"), { code: "SQLITE_FULL" });
    };
    try {
      const r = await mcpCall(c, { tool: "read_item", args: { id: "3" }, on_behalf_of: ALICE });
      expect(r.structured.code).toBe("audit_unavailable");
    } finally {
      audit.append = append;
    }
    const lines = log.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const refused = lines.find((l) => l.msg === "call refused: its call_started audit row could not be written");
    const done = lines.find((l) => l.msg === "mcp_call done");
    expect(refused).toMatchObject({ requestId: "req-deep-1", code: "SQLITE_FULL" });
    expect(done).toMatchObject({ requestId: "req-deep-1", outcome: "audit_unavailable", callId: refused!.callId });
  });
});
