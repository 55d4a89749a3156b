// The real app for the events tests: SQLite in a temp dir (or a given PostgreSQL), host tokens bound
// to teams T1 and T2 plus an unbound one, the fixture vendor as real children, real SDK clients on
// /mcp and real GET /v1/events streams read by SseReader.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { expect } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import type { AppOptions } from "../../src/app/running-app.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import type { ThreadRef } from "../../src/domain/thread.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import { ALICE, BOB, FakeApprovalChannel, fixtureRegistryDoc, THREAD } from "../integration/broker-harness.js";
import { SseReader } from "./sse-reader.js";

export const TOKEN_T1 = `host-t1-${randomBytes(16).toString("hex")}`;
export const TOKEN_T2 = `host-t2-${randomBytes(16).toString("hex")}`;
export const TOKEN_UNBOUND = `host-unbound-${randomBytes(16).toString("hex")}`;
export const THREAD_T2: ThreadRef = { teamId: "T2", channelId: "C2", threadTs: "1700000000.000200" };

/** What one test opened: closed (streams and clients first, then apps, then directories) by `closeAll`. */
export class Opened {
  readonly dirs: string[] = [];
  readonly apps: RunningApp[] = [];
  readonly closers: (() => unknown)[] = [];

  async closeAll(): Promise<void> {
    for (const c of this.closers.splice(0).reverse()) await c();
    for (const a of this.apps.splice(0)) await a.close();
    for (const d of this.dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  }
}

/** Starts the app; `env` overrides the environment, `opts` the start options. */
export async function boot(
  opened: Opened,
  env: Record<string, string> = {},
  opts: Partial<AppOptions> = {},
  registryDoc: unknown = fixtureRegistryDoc(),
) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-events-"));
  opened.dirs.push(dir);
  const log = memoryLogger("debug");
  const approvals = new FakeApprovalChannel();
  const config = loadConfig({
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: dir,
    PORT: "0",
    SLAUDE_HOST_TOKENS: `T1:${TOKEN_T1},T2:${TOKEN_T2},${TOKEN_UNBOUND}`,
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    ...env,
  });
  const app = await startApp({
    config,
    log,
    membership: new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE, BOB),
    registry: parseRegistry(registryDoc, "test"),
    approvalChannel: approvals,
    ...opts,
  });
  opened.apps.push(app);
  return { app, log, approvals };
}

/** A real SDK client on /mcp for `thread`, with host token `token`. */
export async function client(
  opened: Opened,
  app: RunningApp,
  token = TOKEN_T1,
  thread: ThreadRef = THREAD,
): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), {
    requestInit: {
      headers: {
        authorization: `Bearer ${token}`,
        "x-slaude-thread": `${thread.teamId}/${thread.channelId}/${thread.threadTs}`,
      },
    },
  });
  const c = new Client({ name: "events-test", version: "1" });
  await c.connect(transport);
  opened.closers.push(() => c.close().catch(() => {}));
  return c;
}

/** Reports `user`'s turn in `thread` (POST /v1/turns). */
export async function turn(app: RunningApp, user: string, token = TOKEN_T1, thread: ThreadRef = THREAD): Promise<void> {
  const r = await fetch(`${app.url}/v1/turns`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({
      team_id: thread.teamId,
      channel_id: thread.channelId,
      thread_ts: thread.threadTs,
      user_id: user,
    }),
  });
  expect(r.status).toBe(204);
}

/** A thread-scoped `vendor` connection of `owner` in THREAD, with credential `token`. */
export async function connect(app: RunningApp, owner: string, token: string) {
  return app.lifecycle.create({
    teamId: THREAD.teamId,
    ownerUserId: owner,
    service: "vendor",
    scope: "thread",
    channelId: THREAD.channelId,
    threadTs: THREAD.threadTs,
    credential: { kind: "fields", fields: { token, user: owner } },
    createdBy: owner,
  });
}

/** Opens GET /v1/events with `token`; resolves once subscribed. */
export async function subscribe(opened: Opened, app: RunningApp, token = TOKEN_T1): Promise<SseReader> {
  const r = await SseReader.open(`${app.url}/v1/events`, token);
  opened.closers.push(() => r.close());
  return r;
}

/** The call.ended event of the first call to `tool` seen on `s`, and all the events of that call. */
export async function callOf(s: SseReader, tool: string) {
  const ended = await s.waitFor((e) => e.event === "call.ended" && e.data.tool === tool);
  return { ended, events: s.ofCall(ended.data.callId) };
}
