import { type Client, SdkError } from "@modelcontextprotocol/client";
import { type Clock, systemClock } from "../clock/clock.js";
import type { Service } from "../config/registry.js";
import { VERSION } from "../domain/version.js";
import type { CallEventSink } from "../events/event-bus.js";
import { remoteRecovered, vendorTag } from "../events/vendor-events.js";
import { processStartTicks } from "../proc/proc.js";
import type { Connection } from "../store/records.js";
import { AvailabilityBook, type BackoffState, type Unavailability } from "./availability.js";
import type { ChildLedger } from "./child-ledger.js";
import { openSandbox, type SandboxSettings } from "./child-sandbox.js";
import type { RenderedCredential } from "./credential-template.js";
import {
  EraBook,
  type EraFound,
  eraOf,
  incompatibilityOf,
  incompatibilityText,
  negotiationOf,
  VendorClient,
  vendorProtocolOf,
} from "./era.js";
import { PoolError } from "./errors.js";
import { GroupStdioTransport } from "./group-stdio-transport.js";
import { connectRemote, httpStatusOf, type RemoteSession } from "./remote.js";
import { refuseRemoteConnect } from "./remote-refusal.js";

export type { BackoffState, Unavailability } from "./availability.js";

/** A started vendor: an initialized MCP client plus the means to stop it. */
export interface VendorHandle {
  readonly client: Client;
  readonly kind: "stdio" | "remote";
  /** Process group id of a stdio child. */
  readonly pid: number | undefined;
  /** Graceful stop (stdin close → SIGTERM → SIGKILL of the group). */
  close(): Promise<void>;
  /** Immediate SIGKILL (hung or revoked). */
  kill(): Promise<void>;
  /** Registers a callback for when the vendor goes away on its own (crash, transport failure). */
  onClosed(cb: () => void): void;
  /** A remote vendor's lost session: the class of the transport failure that ended it, if one did. */
  lostReason?(): string | undefined;
}

/** Starts vendors for connections: the pool's port to processes and networks. */
export interface VendorLauncher {
  /** Starts `service` for `connection` with its credential as already rendered (env or header). */
  launch(connection: Connection, service: Service, secrets: RenderedCredential): Promise<VendorHandle>;
}

/** Where the broker reads a remote vendor's connect backoff (describe and connections_list report it). */
export interface BackoffSource {
  backoffOf(connectionId: string): BackoffState | undefined;
  /** Why the connection's vendor cannot be used now (backoff, rejected credential, failed start), if so. */
  unavailableOf?(connectionId: string): Unavailability | undefined;
  /** The MCP era the service's vendor spoke at its last start, if one started since the broker did. */
  eraOf?(service: string): EraFound | undefined;
}

/** Settings of the production launcher. */
export interface LauncherOptions extends SandboxSettings {
  readonly ledger: ChildLedger;
  readonly stopGraceMs?: number;
  readonly initializeTimeoutMs?: number;
  readonly clock: Clock;
  /** Bounds the stop sequence of real processes (default: wall time, whatever `clock` is). */
  readonly processClock?: Clock;
  /** Where remote.unavailable / remote.recovered go (default nowhere). */
  readonly events?: CallEventSink;
}

/** Starts stdio children and connects to remote vendors. */
export class ProductionLauncher implements VendorLauncher, BackoffSource {
  private readonly book: AvailabilityBook;
  private readonly eras = new EraBook();

  constructor(private readonly opts: LauncherOptions) {
    this.book = new AvailabilityBook(opts.clock);
  }

  /** The current backoff of a remote connection, if its connects have been failing. */
  backoffOf(connectionId: string): BackoffState | undefined {
    return this.book.backoffOf(connectionId);
  }

  /** Why a connection's vendor cannot be used now, as its last start or connect showed. */
  unavailableOf(connectionId: string): Unavailability | undefined {
    return this.book.of(connectionId);
  }

  eraOf(service: string): EraFound | undefined {
    return this.eras.of(service);
  }

  /** A started vendor's era, remembered for its service. */
  private started(connection: Connection, service: Service, client: Client): boolean {
    const found = eraOf(client, vendorProtocolOf(service), this.opts.clock.now());
    if (found) this.eras.record(service.name, found);
    return this.book.started(connection.id);
  }

  /** A version mismatch, if `cause` is one: recorded (no backoff) and returned as the pool's refusal. */
  private incompatible(connection: Connection, service: Service, cause: unknown): PoolError | undefined {
    const found = incompatibilityOf(cause, vendorProtocolOf(service));
    if (!found) return undefined;
    const detail = incompatibilityText(found);
    this.book.incompatible(connection.id, detail);
    const where = { service: service.name, connectionId: connection.id, detail };
    this.opts.log.warn("vendor speaks another MCP protocol version", where);
    const message = `${service.displayName} speaks another MCP protocol version (${detail})`;
    return new PoolError("vendor_incompatible", message, { cause, detail });
  }

  async launch(connection: Connection, service: Service, secrets: RenderedCredential): Promise<VendorHandle> {
    return secrets.kind === "env"
      ? this.launchStdio(connection, service, secrets.env)
      : this.launchRemote(connection, service, secrets);
  }

  private async launchStdio(
    connection: Connection,
    service: Service,
    credentialEnv: Readonly<Record<string, string>>,
  ): Promise<VendorHandle> {
    const t = service.entry.transport;
    if (t.type !== "stdio") throw new Error("not a stdio service");

    const { home, uid, env, cleanup } = openSandbox(this.opts, connection.id, t.env, credentialEnv);
    // The leader's start time: every process of this connection started after it.
    let leaderStart: number | undefined;
    const transport = new GroupStdioTransport({
      command: t.command,
      args: t.args,
      env,
      cwd: t.cwd ?? home,
      ...(uid !== undefined ? { uid, gid: uid } : {}),
      stopGraceMs: this.opts.stopGraceMs ?? 2_000,
      clock: this.opts.processClock ?? systemClock,
      onSpawn: (pid) => {
        leaderStart = processStartTicks(pid);
        this.opts.ledger.record(pid, connection.id, { home, ...(uid !== undefined ? { uid } : {}) });
      },
      onStderr: () => {
        // Vendor stderr may echo its credential: it is dropped, never logged.
      },
    });
    const client = new VendorClient(
      { name: "slaude-connect", version: VERSION },
      negotiationOf(vendorProtocolOf(service)),
    );
    let closedCb: (() => void) | undefined;
    let cleaned = false;
    const cleanOnce = () => {
      if (cleaned) return;
      cleaned = true;
      cleanup(leaderStart);
      // Forgotten only after the sweep: a crash in between leaves the record for the next start.
      if (transport.pid) this.opts.ledger.forget(transport.pid);
    };
    client.onclose = () => {
      cleanOnce();
      closedCb?.();
    };
    try {
      // Client.connect starts the transport (spawn) and runs initialize.
      await client.connect(transport, { timeout: this.opts.initializeTimeoutMs ?? 30_000 });
    } catch (cause) {
      await transport.kill();
      cleanOnce();
      const mismatch = this.incompatible(connection, service, cause);
      if (mismatch) throw mismatch;
      // A spawn error's errno code; the SDK's own errors carry string codes too ("CONNECTION_CLOSED").
      const spawnError = cause instanceof SdkError ? undefined : (cause as NodeJS.ErrnoException).code;
      const failure = typeof spawnError === "string" ? spawnError : "initialize_failed";
      this.book.startFailed(connection.id, failure);
      if (typeof spawnError === "string")
        throw new PoolError("spawn_failed", `could not start the ${service.displayName} vendor (${spawnError})`, {
          cause,
          detail: failure,
        });
      throw new PoolError("initialize_failed", `the ${service.displayName} vendor did not start correctly`, {
        cause,
        detail: failure,
      });
    }
    this.started(connection, service, client);
    return {
      client,
      kind: "stdio",
      pid: transport.pid,
      close: async () => {
        await transport.close();
        cleanOnce();
      },
      kill: async () => {
        await transport.kill();
        cleanOnce();
      },
      onClosed: (cb) => (closedCb = cb),
    };
  }

  private async launchRemote(
    connection: Connection,
    service: Service,
    header: { readonly name: string; readonly value: string },
  ): Promise<VendorHandle> {
    const t = service.entry.transport;
    if (t.type !== "http") throw new Error("not a remote service");
    const b = this.book.backoffOf(connection.id);
    if (b)
      throw new PoolError(
        "backoff",
        `${service.displayName} is unreachable; retrying after ${new Date(b.retryAt).toISOString()}`,
        { retryAt: b.retryAt, detail: b.lastError },
      );
    let session: RemoteSession;
    try {
      const target = {
        url: new URL(t.url),
        protocol: t.protocol,
        era: vendorProtocolOf(service),
        headers: { [header.name]: header.value },
        initializeTimeoutMs: this.opts.initializeTimeoutMs ?? 30_000,
      };
      session = await connectRemote(target).catch((first: unknown) => {
        // A vendor restarted on the same port leaves a kept-alive socket that fails the next request
        // ("other side closed"): one fresh connect before counting a failure. Only the handshake is
        // repeated, never a tool call; an HTTP answer (401, 404, 503…) is final.
        if (httpStatusOf(first) !== undefined) throw first;
        return connectRemote(target);
      });
    } catch (cause) {
      // A version mismatch answers with a 400 (-32022): permanent, so no backoff; the operator sets `protocol`.
      const mismatch = this.incompatible(connection, service, cause);
      if (mismatch) throw mismatch;
      throw refuseRemoteConnect({ ...this.opts, book: this.book }, connection, service, cause);
    }
    if (this.started(connection, service, session.client))
      this.opts.events?.emit(remoteRecovered(vendorTag(connection, service), this.opts.clock.now()));
    const { client } = session;
    let closedCb: (() => void) | undefined;
    client.onclose = () => {
      const lost = session.lostReason();
      if (lost)
        this.opts.log.warn("remote vendor session lost", {
          service: service.name,
          connectionId: connection.id,
          error: lost,
        });
      closedCb?.();
    };
    return {
      client,
      kind: "remote",
      pid: undefined,
      close: () => client.close(),
      kill: () => client.close(),
      onClosed: (cb) => (closedCb = cb),
      lostReason: () => session.lostReason(),
    };
  }
}
