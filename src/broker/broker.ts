import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { McpServer } from "@modelcontextprotocol/server";
import type { ApprovalService } from "../approvals/approval-service.js";
import { errorMessage } from "../domain/errors.js";
import type { ThreadRef } from "../domain/thread.js";
import type { CallEventBus } from "../events/event-bus.js";
import { PeriodicJob } from "../jobs/periodic-job.js";
import type { VendorPool } from "../pool/pool.js";
import { threadKey } from "../turns/turn-rules.js";
import type { TurnStore } from "../turns/turn-store.js";
import { answer, refusal } from "./answer.js";
import { CallService } from "./call.js";
import type { BrokerDeps, CallerContext } from "./deps.js";
import { refreshMetadata } from "./describe.js";
import { type BrokerServerOptions, createBrokerServer } from "./mcp-server.js";
import type { CallerResolver } from "./tool-request.js";

/** How often every live vendor's tool list is read again when it never says it changed (60 s). */
export const TOOL_RELIST_INTERVAL_MS = 60_000;

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
  readonly turns: TurnStore;
  readonly approvals: ApprovalService;
  /** The call event stream, for subscribers (GET /v1/events). */
  readonly events: CallEventBus;
  /** One call service for every session, so decrypted credentials are cached (and forgotten) in one place. */
  readonly calls: CallService;
  private readonly jobs: PeriodicJob[] = [];

  constructor(deps: BrokerDeps & { readonly events: CallEventBus }) {
    this.deps = deps;
    this.turns = deps.turns;
    this.pool = deps.pool;
    this.approvals = deps.approvals;
    this.events = deps.events;
    this.calls = new CallService(this.deps);
    // Metadata is cached per team, redacted with the credential of the connection whose child fetched
    // it; the vendor gets its first call once the (bounded) tool list is in and checked against the
    // pins, and is read the same way again whenever it says its list changed (and periodically).
    this.pool.onVendorStarted((client, lease) => {
      const origin = { teamId: lease.connection.teamId, redactor: lease.redactor };
      return this.deps.pins.watchVendor(client, {
        scope: { teamId: lease.connection.teamId, service: lease.service.name },
        read: () => refreshMetadata(this.deps, lease.service, client, origin),
        stop: () => this.pool.dropClient(client),
      });
    });
    // A revoked, replaced or expired connection's child dies with it, and its plaintext leaves memory.
    deps.lifecycle.onEnded((c) => {
      this.calls.forget(c.id);
      return this.pool.drop(c.id, "kill");
    });
  }

  /**
   * Kills children left by a crashed predecessor, expires its abandoned approvals, starts the reapers.
   * `expireAbandoned: false` (replicas on one database): other live replicas' pending approvals are not
   * abandoned; a dead replica's expire at their own expiry (the leader's approval-expiry job).
   */
  async start(
    opts: { idleReapIntervalMs?: number; expireAbandoned?: boolean; toolRelistIntervalMs?: number } = {},
  ): Promise<void> {
    const killed = this.deps.ledger.sweep();
    if (killed) this.deps.log.warn("killed vendor processes left by a previous run", { count: killed });
    const abandoned = opts.expireAbandoned === false ? 0 : await this.approvals.expireAbandoned();
    if (abandoned) this.deps.log.info("expired approvals left pending by a previous run", { count: abandoned });
    const idle = new PeriodicJob({
      name: "idle reaper",
      intervalMs: opts.idleReapIntervalMs ?? 15_000,
      run: async () => {
        await this.reconcile();
        await this.pool.reapIdle();
        this.calls.sessions.opened.sweepExpired();
      },
      log: this.deps.log,
      clock: this.deps.clock,
      metrics: this.deps.metrics,
    });
    idle.start();
    this.jobs.push(idle);
    // For vendors that change their tools without saying so (no list_changed): each live vendor is
    // read again, one at a time, so a change is quarantined within one interval.
    const relist = new PeriodicJob({
      name: "tool relist",
      intervalMs: opts.toolRelistIntervalMs ?? TOOL_RELIST_INTERVAL_MS,
      run: () => this.deps.pins.relistAll(this.pool.liveClients()),
      log: this.deps.log,
      clock: this.deps.clock,
      metrics: this.deps.metrics,
    });
    relist.start();
    this.jobs.push(relist);
  }

  /**
   * Stops children whose connection is no longer active in the store: a revoke or expiry done by
   * another process (the CLI) reaches the pool here, within one reaper interval.
   */
  async reconcile(): Promise<number> {
    let dropped = 0;
    for (const id of this.pool.liveConnectionIds()) if (await this.reconcileConnection(id)) dropped++;
    return dropped;
  }

  /**
   * Re-reads one connection and, unless it is still active, forgets its credential and kills its
   * child (a replica's "connection ended" signal); true when it was ended. Never trusts the signal itself.
   */
  async reconcileConnection(id: string): Promise<boolean> {
    const c = await this.deps.store.connections.get(id);
    if (c && c.status === "active" && c.expiresAt > this.deps.clock.now()) return false;
    this.calls.forget(id);
    await this.pool.drop(id, "kill");
    return true;
  }

  /**
   * An MCP server for a session bound to `thread`; the caller is resolved from the thread's live
   * turns at each call (the turn the request names, or the one user whose turns are live).
   */
  serverForThread(thread: ThreadRef): McpServer {
    // Served from now on (memory: at once; PostgreSQL: a write in flight, repeated by the first call).
    this.turns
      .markServed(thread, this.deps.clock.now())
      .catch((err: Error) => this.deps.log.warn("could not mark a thread served", { error: err.message }));
    const key = threadKey(thread);
    const resolve: CallerResolver = async (req) => {
      // The endpoint's read, when it read this thread's turns for this very turn id.
      const { ahead } = req;
      const r = await (ahead && ahead.threadKey === key && ahead.turnId === req.turnId
        ? ahead.resolution
        : this.turns.resolve(thread, req.turnId, this.deps.clock.now()));
      if (r.kind === "caller") return { thread, userId: r.userId };
      return r.kind === "no_turn" ? { thread, userId: undefined } : r.kind;
    };
    return createBrokerServer(this.deps, resolve, { calls: this.calls, ...this.connectOptions() });
  }

  /**
   * An MCP server for an embedding host: `getCaller` is called on every tool call. The session
   * binds to the first thread it sees; a later call from another thread is refused.
   */
  serverForHost(getCaller: () => EmbeddedCaller | undefined): McpServer {
    let bound: string | undefined;
    const resolve: CallerResolver = async () => {
      const c = getCaller();
      if (!c) return { thread: { teamId: "", channelId: "", threadTs: "" }, userId: undefined } satisfies CallerContext;
      const thread = { teamId: c.teamId, channelId: c.channelId, threadTs: c.threadTs };
      const key = threadKey(thread);
      bound ??= key;
      if (bound !== key) return "thread_mismatch";
      await this.turns.set(thread, c.userId, this.deps.clock.now());
      return { thread, userId: c.userId };
    };
    return createBrokerServer(this.deps, resolve, { calls: this.calls, ...this.connectOptions() });
  }

  /** How the `connect` tool answers: a consent card through the consent port when one is configured. */
  private connectOptions(): Pick<BrokerServerOptions, "connectAvailable"> {
    const consent = this.deps.consent;
    if (!consent) return {};
    return {
      connectAvailable: async (ctx, caller, service) => {
        try {
          await consent.sendConsent(ctx.thread, caller, service);
        } catch (err) {
          this.deps.log.warn("consent card could not be delivered", { service, error: errorMessage(err) });
          // Its own code: no approval was involved, and the fix (retry, or /connect) differs.
          return refusal("consent_unavailable", { service });
        }
        const message = `I've sent <@${caller}> a private card to connect ${service}. The login link goes only to them, never into this conversation.`;
        return answer(message, { service, message }, "consent_sent");
      },
    };
  }

  /** Connects an in-process MCP client to a host-embedded session (library use). */
  async connectEmbedded(
    getCaller: () => EmbeddedCaller | undefined,
  ): Promise<{ client: Client; close(): Promise<void> }> {
    // The SDK's 2025 client bundle is loaded here only: embedding is library use, and `serve` never needs it.
    const [{ Client }, { InMemoryTransport }] = await Promise.all([
      import("@modelcontextprotocol/sdk/client/index.js"),
      import("@modelcontextprotocol/sdk/inMemory.js"),
    ]);
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
    // Completion rows still waiting for the database are logged by call id (they keep their call_started row).
    this.calls.completions.close();
  }
}
