import { chmodSync, mkdirSync } from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { ApprovalService } from "../approvals/approval-service.js";
import { noApprovalChannel, type ApprovalChannel } from "../approvals/channel.js";
import type { Clock } from "../clock/clock.js";
import type { CacheLimits } from "../config/env.js";
import type { ServiceRegistry } from "../config/registry.js";
import type { ConnectionLifecycle } from "../connections/lifecycle.js";
import { PeriodicJob } from "../jobs/periodic-job.js";
import type { ResultLimits } from "../hygiene/truncate.js";
import type { Logger } from "../log/logger.js";
import { noMembership, type MembershipSource } from "../membership/membership.js";
import { noMetrics, type Metrics } from "../metrics/metrics.js";
import { ChildLedger } from "../pool/child-ledger.js";
import { ProductionLauncher, UidAllocator, type VendorLauncher } from "../pool/launcher.js";
import { VendorPool } from "../pool/pool.js";
import type { ThreadRef } from "../domain/thread.js";
import type { Store } from "../store/store.js";
import { threadKey, TurnState } from "../turns/turn-state.js";
import type { Vault } from "../vault/vault.js";
import type { BrokerDeps, CallerContext } from "./deps.js";
import { CallService } from "./call.js";
import { refreshMetadata } from "./describe.js";
import { failureMessage } from "./outcome.js";
import { createBrokerServer, type BrokerServerOptions, type CallerResolver } from "./mcp-server.js";

/** Everything the broker is built from; the composition root passes real adapters, tests fakes. */
export interface BrokerOptions {
  readonly store: Store;
  readonly vault: Vault;
  readonly registry: ServiceRegistry;
  readonly lifecycle: ConnectionLifecycle;
  readonly clock: Clock;
  readonly log: Logger;
  readonly membership?: MembershipSource;
  readonly approvalChannel?: ApprovalChannel;
  readonly turns?: TurnState;
  /** Where per-connection HOME/TMPDIR and the child ledger live (under the data dir). */
  readonly runDir: string;
  readonly childBaseEnv: Readonly<Record<string, string>>;
  readonly pool?: { maxChildren?: number; idleMs?: number; acquireTimeoutMs?: number; stopGraceMs?: number; childUidBase?: number | undefined };
  readonly limits?: ResultLimits;
  readonly callTimeoutMs?: number;
  readonly approvalTimeoutMs?: number;
  /** Refreshes OAuth credentials before calls (src/login/oauth). */
  readonly refresher?: { fresh(connection: { id: string }): Promise<unknown> };
  /** Delivers the consent card for `connect` (Slack in production). */
  readonly consent?: ConsentNotifier;
  /** Where calls, pool waits, approval decisions and reaper runs are reported (GET /metrics). */
  readonly metrics?: Metrics;
  /** Replaces the process launcher (tests of the pool bookkeeping). */
  readonly launcher?: VendorLauncher;
  /** Bounds the decrypted-credential cache (count and age). */
  readonly credentialCache?: CacheLimits;
}

/** The consent port: shows a user the card that starts connecting a service (privately). */
export interface ConsentNotifier {
  sendConsent(thread: ThreadRef, userId: string, service: string): Promise<void>;
}

/** The caller as an embedding host reports it, on every tool call. */
export interface EmbeddedCaller {
  readonly teamId: string;
  readonly channelId: string;
  readonly threadTs: string;
  readonly userId: string;
}

/** The broker: pool, approvals, turn state and the per-session MCP servers over them. */
export class Broker {
  readonly deps: BrokerDeps;
  readonly pool: VendorPool;
  readonly turns: TurnState;
  readonly approvals: ApprovalService;
  readonly ledger: ChildLedger;
  private readonly launcher: VendorLauncher;
  /** One call service for every session, so decrypted credentials are cached (and forgotten) in one place. */
  private readonly calls: CallService;
  private readonly jobs: PeriodicJob[] = [];

  constructor(private readonly o: BrokerOptions) {
    this.turns = o.turns ?? new TurnState();
    this.ledger = new ChildLedger(path.join(o.runDir, "children"), path.join(o.runDir, "vendors"));
    const uidBase = o.pool?.childUidBase;
    const maxChildren = o.pool?.maxChildren ?? 32;
    const perChildUid = uidBase !== undefined && process.geteuid?.() === 0;
    if (perChildUid) {
      // Children under their own uids must traverse to their private HOME: execute-only, no listing.
      for (const d of [path.dirname(o.runDir), o.runDir, path.join(o.runDir, "vendors")]) {
        mkdirSync(d, { recursive: true, mode: 0o711 });
        chmodSync(d, 0o711);
      }
    }
    const production = new ProductionLauncher({
      baseEnv: o.childBaseEnv,
      runDir: path.join(o.runDir, "vendors"),
      ledger: this.ledger,
      uids: perChildUid ? new UidAllocator(uidBase, maxChildren) : undefined,
      ...(o.pool?.stopGraceMs !== undefined ? { stopGraceMs: o.pool.stopGraceMs } : {}),
      clock: o.clock,
      log: o.log,
    });
    this.launcher = o.launcher ?? production;
    const metrics = o.metrics ?? noMetrics;
    this.pool = new VendorPool(this.launcher, { maxChildren, idleMs: o.pool?.idleMs ?? 600_000, acquireTimeoutMs: o.pool?.acquireTimeoutMs ?? 30_000 }, o.clock, o.log, metrics);
    this.approvals = new ApprovalService({ store: o.store, channel: o.approvalChannel ?? noApprovalChannel, clock: o.clock, log: o.log, timeoutMs: o.approvalTimeoutMs ?? 120_000, metrics });
    this.deps = {
      store: o.store,
      vault: o.vault,
      registry: o.registry,
      lifecycle: o.lifecycle,
      pool: this.pool,
      approvals: this.approvals,
      membership: o.membership ?? noMembership,
      turns: this.turns,
      clock: o.clock,
      log: o.log,
      metrics,
      limits: o.limits ?? { maxBytes: 50_000, maxLines: 2_000 },
      callTimeoutMs: o.callTimeoutMs ?? 120_000,
      backoffOf: (id) => (this.launcher instanceof ProductionLauncher ? this.launcher.backoffOf(id) : undefined),
      ...(o.refresher ? { refresher: o.refresher } : {}),
      ...(o.credentialCache ? { credentialCache: o.credentialCache } : {}),
    };
    // Metadata is cached per team, redacted with the credential of the connection whose child fetched
    // it; the vendor gets its first call once the (bounded) tool list is in.
    this.pool.onVendorStarted((service, client, conn) => refreshMetadata(this.deps, service, client, { teamId: conn.teamId, redactor: this.calls.redactorFor(conn, service) }));
    this.calls = new CallService(this.deps);
    // A revoked, replaced or expired connection's child dies with it, and its plaintext leaves memory.
    o.lifecycle.onEnded((c) => {
      this.calls.forget(c.id);
      return this.pool.drop(c.id, "kill");
    });
  }

  /** Kills children left by a crashed predecessor, expires its abandoned approvals, starts the reapers. */
  async start(opts: { idleReapIntervalMs?: number } = {}): Promise<void> {
    const killed = this.ledger.sweep();
    if (killed) this.o.log.warn("killed vendor processes left by a previous run", { count: killed });
    const abandoned = await this.approvals.expireAbandoned();
    if (abandoned) this.o.log.info("expired approvals left pending by a previous run", { count: abandoned });
    const idle = new PeriodicJob({
      name: "idle reaper",
      intervalMs: opts.idleReapIntervalMs ?? 15_000,
      run: async () => {
        await this.reconcile();
        await this.pool.reapIdle();
        this.calls.opened.sweepExpired();
      },
      log: this.o.log,
      clock: this.o.clock,
      metrics: this.deps.metrics,
    });
    idle.start();
    this.jobs.push(idle);
  }

  /**
   * Stops children whose connection is no longer active in the store: a revoke or expiry done by
   * another process (the CLI) reaches the pool here, within one reaper interval.
   */
  async reconcile(): Promise<number> {
    let dropped = 0;
    for (const id of this.pool.liveConnectionIds()) {
      const c = await this.o.store.connections.get(id);
      if (!c || c.status !== "active" || c.expiresAt <= this.o.clock.now()) {
        this.calls.forget(id);
        await this.pool.drop(id, "kill");
        dropped++;
      }
    }
    return dropped;
  }

  /**
   * An MCP server for a session bound to `thread`; the caller is resolved from the thread's live
   * turns at each call (the turn the request names, or the one user whose turns are live).
   */
  serverForThread(thread: ThreadRef): McpServer {
    this.turns.markServed(thread);
    const resolve: CallerResolver = (req) => {
      const r = this.turns.resolve(thread, req.turnId, this.o.clock.now());
      if (r.kind === "caller") return { thread, userId: r.userId };
      return r.kind === "no_turn" ? { thread, userId: undefined } : r.kind;
    };
    return createBrokerServer(this.deps, resolve, { ...this.connectOptions(), calls: this.calls });
  }

  /**
   * An MCP server for an embedding host: `getCaller` is called on every tool call. The session
   * binds to the first thread it sees; a later call from another thread is refused.
   */
  serverForHost(getCaller: () => EmbeddedCaller | undefined): McpServer {
    let bound: string | undefined;
    const resolve: CallerResolver = () => {
      const c = getCaller();
      if (!c) return { thread: { teamId: "", channelId: "", threadTs: "" }, userId: undefined } satisfies CallerContext;
      const thread = { teamId: c.teamId, channelId: c.channelId, threadTs: c.threadTs };
      const key = threadKey(thread);
      bound ??= key;
      if (bound !== key) return "thread_mismatch";
      this.turns.set(thread, c.userId, this.o.clock.now());
      return { thread, userId: c.userId };
    };
    return createBrokerServer(this.deps, resolve, { ...this.connectOptions(), calls: this.calls });
  }

  /** How the `connect` tool answers: a consent card through the consent port when one is configured. */
  private connectOptions(): BrokerServerOptions {
    const consent = this.o.consent;
    if (!consent) return {};
    return {
      connectAvailable: async (ctx, caller, service) => {
        try {
          await consent.sendConsent(ctx.thread, caller, service);
        } catch (err) {
          this.o.log.warn("consent card could not be delivered", { service, error: (err as Error).message });
          // Its own code: no approval was involved, and the fix (retry, or /connect) differs.
          const message = failureMessage("consent_unavailable", { service });
          return { content: [{ type: "text", text: message }], structuredContent: { status: "refused", code: "consent_unavailable", message }, isError: true };
        }
        const message = `I've sent <@${caller}> a private card to connect ${service}. The login link goes only to them, never into this conversation.`;
        return { content: [{ type: "text", text: message }], structuredContent: { status: "consent_sent", service, message } };
      },
    };
  }

  /** Connects an in-process MCP client to a host-embedded session (library use). */
  async connectEmbedded(getCaller: () => EmbeddedCaller | undefined): Promise<{ client: Client; close(): Promise<void> }> {
    const server = this.serverForHost(getCaller);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: "slaude-host", version: "1" });
    await client.connect(clientSide);
    return {
      client,
      close: async () => {
        await client.close();
        await server.close();
      },
    };
  }

  /** Stops the reapers and every vendor child. */
  async shutdown(): Promise<void> {
    await this.approvals.shutdown();
    for (const j of this.jobs) await j.stop();
    await this.pool.shutdown();
  }
}
