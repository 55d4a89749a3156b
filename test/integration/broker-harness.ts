// A broker built from real parts for integration tests: a SQLite file in a temp dir, the real
// vault, the real pool spawning the fixture vendor as child processes, an in-memory membership
// table and a scriptable approval channel (the Slack adapter comes later).

import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { type BrokerOptions, buildBroker } from "../../src/app/broker-factory.js";
import type { ApprovalService } from "../../src/approvals/approval-service.js";
import type { ApprovalCard } from "../../src/approvals/card.js";
import type { ApprovalChannel, ApprovalOutcome } from "../../src/approvals/channel.js";
import type { Broker, EmbeddedCaller } from "../../src/broker/broker.js";
import { ManualClock, systemClock } from "../../src/clock/clock.js";
import { parseRegistry, type ServiceRegistry } from "../../src/config/registry.js";
import { ConnectionLifecycle } from "../../src/connections/lifecycle.js";
import type { ThreadRef } from "../../src/domain/thread.js";
import { memoryLogger } from "../../src/log/logger.js";
import { StaticMembership } from "../../src/membership/membership.js";
import type { Approval, Connection } from "../../src/store/records.js";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { KeyRing } from "../../src/vault/keyring.js";
import { Vault } from "../../src/vault/vault.js";
import { VENDOR_STDIO_PATH } from "../fixtures/paths.js";

const require = createRequire(import.meta.url);
/** tsx's loader as an absolute URL: children run in their private HOME, so a bare "tsx" would not resolve. */
export const TSX_LOADER = pathToFileURL(require.resolve("tsx")).href;

/** The registry entry of the fixture vendor, as service `vendor` (plus a few variants). */
export function fixtureRegistryDoc(extraEnv: Record<string, string> = {}): unknown {
  const transport = {
    type: "stdio",
    command: process.execPath,
    args: ["--import", TSX_LOADER, VENDOR_STDIO_PATH],
    env: extraEnv,
    credentialEnv: { VENDOR_TOKEN: "{{token}}", VENDOR_USER: "{{user}}" },
  };
  return {
    services: {
      vendor: {
        transport,
        capture: {
          strategy: "paste",
          fields: [
            { name: "token", label: "Token" },
            { name: "user", label: "User", secret: false },
          ],
        },
        scopes: ["thread", "user", "shared"],
        tools: {
          echo: ["borrowable", "read"],
          read_item: ["borrowable", "read"],
          write_item: ["borrowable", "write"],
          env_dump: ["borrowable", "read"],
          leak_token: ["borrowable", "read"],
          fail_with_token: ["borrowable", "read"],
          slow: ["borrowable", "read"],
          crash: ["borrowable", "read"],
          hang: ["borrowable", "read"],
          flood: ["borrowable", "read"],
          spawn_grandchild: ["borrowable", "read"],
          wait_for_file: ["borrowable", "read"],
          progress_burst: ["borrowable", "read"],
          whoami_personal: ["personal", "read"],
          search_shared: ["read"],
        },
      },
    },
  };
}

/** A scriptable approval channel: records every card; tests click through `approvals.decide`. */
export class FakeApprovalChannel implements ApprovalChannel {
  available = true;
  readonly asked: { approval: Approval; card: ApprovalCard }[] = [];
  readonly settledWith: { approval: Approval; outcome: ApprovalOutcome }[] = [];
  private waiters: ((a: { approval: Approval; card: ApprovalCard }) => void)[] = [];
  failDelivery = false;

  async ask(approval: Approval, card: ApprovalCard): Promise<void> {
    if (this.failDelivery) throw new Error("slack unreachable");
    const entry = { approval, card };
    this.asked.push(entry);
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f(entry);
  }
  async settled(approval: Approval, outcome: ApprovalOutcome): Promise<void> {
    this.settledWith.push({ approval, outcome });
  }
  /** Resolves with the next card shown (or one already shown and not yet taken). */
  nextCard(taken = 0): Promise<{ approval: Approval; card: ApprovalCard }> {
    const existing = this.asked[taken];
    if (existing) return Promise.resolve(existing);
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

/** The thread most tests run in. */
export const THREAD: ThreadRef = { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" };
export const ALICE = "UALICE01";
export const BOB = "UBOB0002";
export const CAROL = "UCAROL03";

/** A broker over real parts in a temp dir. */
/**
 * Alice's thread-scoped connection to the fixture `vendor` in THREAD, the usual set-up of a test
 * that calls through the broker: a fresh canary token unless `token` is given.
 */
export function aliceThreadConnection(
  lifecycle: Pick<ConnectionLifecycle, "create">,
  o: { token?: string; ttlMs?: number | undefined } = {},
): Promise<Connection> {
  return lifecycle.create({
    teamId: THREAD.teamId,
    ownerUserId: ALICE,
    service: "vendor",
    scope: "thread",
    channelId: THREAD.channelId,
    threadTs: THREAD.threadTs,
    credential: {
      kind: "fields",
      fields: { token: o.token ?? `canary-${randomBytes(12).toString("hex")}`, user: ALICE },
    },
    createdBy: ALICE,
    ...(o.ttlMs !== undefined ? { ttlMs: o.ttlMs } : {}),
  });
}

export interface Harness {
  readonly dir: string;
  readonly store: SqliteStore;
  readonly vault: Vault;
  readonly keyB64: string;
  readonly registry: ServiceRegistry;
  readonly lifecycle: ConnectionLifecycle;
  readonly broker: Broker;
  readonly membership: StaticMembership;
  readonly approvals: FakeApprovalChannel;
  readonly approvalService: ApprovalService;
  readonly clock: ManualClock;
  readonly log: ReturnType<typeof memoryLogger>;
  /** Adds a thread-scoped `vendor` connection for `owner` with a fresh canary token. */
  connect(
    owner: string | null,
    opts?: { scope?: "thread" | "user" | "shared"; thread?: ThreadRef; token?: string; service?: string },
  ): Promise<{ connection: Connection; token: string }>;
  /** An in-process MCP client for a host session whose caller is whatever `turn.user` is at call time. */
  session(thread?: ThreadRef): Promise<{ client: Client; turn: { user: string }; close(): Promise<void> }>;
  close(): Promise<void>;
}

/** Builds a harness; `opts` overrides broker options (pool sizes, timeouts…). */
export async function makeHarness(
  opts: Partial<BrokerOptions> & {
    registryDoc?: unknown;
    realClock?: boolean;
    dbFile?: string;
    lockWaitMs?: number;
  } = {},
): Promise<Harness> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-broker-"));
  // `dbFile` places the database elsewhere (e.g. on a small tmpfs); `lockWaitMs` shortens the store's lock wait.
  const { store } = openSqliteStore(
    opts.dbFile ?? path.join(dir, "slaude.db"),
    Date.now,
    opts.lockWaitMs ? { maxWaitMs: opts.lockWaitMs } : undefined,
  );
  const keyB64 = randomBytes(32).toString("base64");
  const vault = new Vault(KeyRing.fromBase64(keyB64));
  const registry = parseRegistry(opts.registryDoc ?? fixtureRegistryDoc(), "test-registry.json");
  const clock = new ManualClock(Date.now());
  const realClock = opts.realClock ? systemClock : clock;
  const log = memoryLogger("debug");
  const lifecycle = new ConnectionLifecycle({ store, vault, registry, clock: realClock, log });
  const membership = new StaticMembership().add(THREAD.teamId, THREAD.channelId, ALICE, BOB);
  const approvals = new FakeApprovalChannel();
  const broker = buildBroker({
    store,
    vault,
    registry,
    lifecycle,
    clock: realClock,
    log,
    membership,
    approvalChannel: approvals,
    runDir: path.join(dir, "run"),
    childBaseEnv: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    pool: { maxChildren: 8, idleMs: 60_000, acquireTimeoutMs: 5_000, stopGraceMs: 500 },
    callTimeoutMs: 10_000,
    approvalTimeoutMs: 10_000,
    ...opts,
  });
  await broker.start({ idleReapIntervalMs: 3_600_000 });
  const sessions: { close(): Promise<void> }[] = [];
  const h: Harness = {
    dir,
    store,
    vault,
    keyB64,
    registry,
    lifecycle,
    broker,
    membership,
    approvals,
    approvalService: broker.approvals,
    clock,
    log,
    async connect(owner, o = {}) {
      const token = o.token ?? `canary-${randomBytes(12).toString("hex")}`;
      const scope = o.scope ?? (owner === null ? "shared" : "thread");
      const t = o.thread ?? THREAD;
      const connection = await lifecycle.create({
        teamId: t.teamId,
        ownerUserId: owner,
        service: o.service ?? "vendor",
        scope,
        channelId: scope === "thread" ? t.channelId : null,
        threadTs: scope === "thread" ? t.threadTs : null,
        credential: { kind: "fields", fields: { token, user: owner ?? "shared-bot" } },
        createdBy: owner ?? "cli:test",
      });
      return { connection, token };
    },
    async session(thread = THREAD) {
      const turn = { user: ALICE };
      const getCaller = (): EmbeddedCaller => ({ ...thread, userId: turn.user });
      const s = await broker.connectEmbedded(getCaller);
      sessions.push(s);
      return { client: s.client, turn, close: s.close };
    },
    async close() {
      for (const s of sessions) await s.close().catch(() => {});
      await broker.shutdown();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return h;
}

/** Calls mcp_call through a real MCP client and returns the structured result and text. */
export async function mcpCall(
  client: Client,
  args: { service?: string; tool: string; args?: Record<string, unknown>; on_behalf_of: string },
  options: Parameters<Client["callTool"]>[2] = {},
) {
  const r = await client.callTool(
    {
      name: "mcp_call",
      arguments: {
        service: args.service ?? "vendor",
        tool: args.tool,
        args: args.args ?? {},
        on_behalf_of: args.on_behalf_of,
      },
    },
    undefined,
    options,
  );
  const text = (r.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("\n");
  return {
    raw: r,
    structured: r.structuredContent as Record<string, unknown> & { status: string; code?: string; ranAs?: string },
    text,
    isError: r.isError === true,
  };
}
