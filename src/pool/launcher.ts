import { chownSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { systemClock, type Clock } from "../clock/clock.js";
import type { Service } from "../config/registry.js";
import type { Logger } from "../log/logger.js";
import type { Connection } from "../store/records.js";
import { VERSION } from "../domain/version.js";
import { killProcesses, processStartTicks } from "../proc/proc.js";
import type { ChildLedger } from "./child-ledger.js";
import type { RenderedCredential } from "./credential-template.js";
import { PoolError } from "./errors.js";
import { GroupStdioTransport } from "./group-stdio-transport.js";

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
}

/** Starts vendors for connections: the pool's port to processes and networks. */
export interface VendorLauncher {
  /** Starts `service` for `connection` with its credential as already rendered (env or header). */
  launch(connection: Connection, service: Service, secrets: RenderedCredential): Promise<VendorHandle>;
}

/** Where the broker reads a remote vendor's connect backoff (describe and connections_list report it). */
export interface BackoffSource {
  backoffOf(connectionId: string): BackoffState | undefined;
}

/** Settings of the production launcher. */
export interface LauncherOptions {
  /** Base environment every child gets (PATH, locale): nothing else of the broker's. */
  readonly baseEnv: Readonly<Record<string, string>>;
  /** Where private per-connection HOME/TMPDIR directories are made. */
  readonly runDir: string;
  readonly ledger: ChildLedger;
  /** When set and the broker runs as root, children run under uids allocated from here. */
  readonly uids?: UidAllocator | undefined;
  readonly stopGraceMs?: number;
  readonly initializeTimeoutMs?: number;
  readonly clock: Clock;
  /** Bounds the stop sequence of real processes (default: wall time, whatever `clock` is). */
  readonly processClock?: Clock;
  readonly log: Logger;
}

/** Hands out distinct unprivileged uids to live children, so they cannot read each other's /proc/<pid>/environ. */
export class UidAllocator {
  private readonly free: number[];
  constructor(base: number, count: number) {
    this.free = Array.from({ length: count }, (_, i) => base + i);
  }
  take(): number {
    const uid = this.free.shift();
    if (uid === undefined) throw new PoolError("pool_busy", "no free child uid");
    return uid;
  }
  give(uid: number): void {
    this.free.push(uid);
  }
}

const BACKOFF_START_MS = 60_000;
const BACKOFF_MAX_MS = 15 * 60_000;

/** The backoff state of a remote vendor connection after failed connects. */
export interface BackoffState {
  readonly failures: number;
  readonly retryAt: number;
  readonly lastError: string;
}

/** Starts stdio children and connects to remote vendors. */
export class ProductionLauncher implements VendorLauncher, BackoffSource {
  private readonly backoff = new Map<string, BackoffState>();

  constructor(private readonly opts: LauncherOptions) {}

  /** The current backoff of a remote connection, if its connects have been failing. */
  backoffOf(connectionId: string): BackoffState | undefined {
    const b = this.backoff.get(connectionId);
    return b && b.retryAt > this.opts.clock.now() ? b : undefined;
  }

  async launch(connection: Connection, service: Service, secrets: RenderedCredential): Promise<VendorHandle> {
    return secrets.kind === "env" ? this.launchStdio(connection, service, secrets.env) : this.launchRemote(connection, service, secrets);
  }

  private async launchStdio(connection: Connection, service: Service, credentialEnv: Readonly<Record<string, string>>): Promise<VendorHandle> {
    const t = service.entry.transport;
    if (t.type !== "stdio") throw new Error("not a stdio service");

    mkdirSync(this.opts.runDir, { recursive: true, mode: 0o711 });
    const root = mkdtempSync(path.join(this.opts.runDir, `${connection.id}-`));
    const home = path.join(root, "home");
    const tmp = path.join(root, "tmp");
    mkdirSync(home, { mode: 0o700 });
    mkdirSync(tmp, { mode: 0o700 });
    const uid = this.opts.uids?.take();
    if (uid !== undefined) for (const d of [root, home, tmp]) chownSync(d, uid, uid);
    // The leader's start time: every process of this connection started after it.
    let leaderStart: number | undefined;
    const cleanup = () => {
      // Every process of this connection, however detached: its private HOME (inherited through
      // setsid and double forks) and, when it has one, its own uid (which it cannot leave). Done
      // before the uid is handed to another connection.
      const killed = killProcesses({ envEntries: [`HOME=${home}`], ...(uid !== undefined ? { uid } : {}), ...(leaderStart !== undefined ? { sinceTicks: leaderStart } : {}) });
      if (killed) this.opts.log.warn("killed processes a vendor left behind", { connectionId: connection.id, count: killed });
      rmSync(root, { recursive: true, force: true });
      if (uid !== undefined) this.opts.uids?.give(uid);
    };

    // Allowlisted base + the registry's static env + this connection's credential. Nothing else.
    const env: Record<string, string> = {
      ...this.opts.baseEnv,
      HOME: home,
      TMPDIR: tmp,
      USER: "slaude-vendor",
      LOGNAME: "slaude-vendor",
      ...t.env,
      ...credentialEnv,
    };
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
    const client = new Client({ name: "slaude-connect", version: VERSION });
    let closedCb: (() => void) | undefined;
    let cleaned = false;
    const cleanOnce = () => {
      if (cleaned) return;
      cleaned = true;
      cleanup();
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
      const spawnError = (cause as NodeJS.ErrnoException).code;
      if (typeof spawnError === "string") throw new PoolError("spawn_failed", `could not start the ${service.displayName} vendor (${spawnError})`, { cause });
      throw new PoolError("initialize_failed", `the ${service.displayName} vendor did not start correctly`, { cause });
    }
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

  private async launchRemote(connection: Connection, service: Service, header: { readonly name: string; readonly value: string }): Promise<VendorHandle> {
    const t = service.entry.transport;
    if (t.type !== "http") throw new Error("not a remote service");
    const now = this.opts.clock.now();
    const b = this.backoff.get(connection.id);
    if (b && b.retryAt > now) {
      throw new PoolError("backoff", `${service.displayName} is unreachable; retrying after ${new Date(b.retryAt).toISOString()}`, { retryAt: b.retryAt });
    }
    const headers = { [header.name]: header.value };
    const url = new URL(t.url);
    const attempt = async (make: () => Transport): Promise<Client> => {
      const client = new Client({ name: "slaude-connect", version: VERSION });
      await client.connect(make(), { timeout: this.opts.initializeTimeoutMs ?? 30_000 });
      return client;
    };
    let client: Client;
    try {
      if (t.protocol === "sse") client = await attempt(() => new SSEClientTransport(url, { requestInit: { headers }, eventSourceInit: { fetch: withHeaders(headers) } }));
      else {
        try {
          client = await attempt(() => new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
        } catch (first) {
          const code = (first as { code?: number }).code;
          // Only a server that does not speak Streamable HTTP (404/405) gets the SSE fallback.
          if (t.protocol !== "auto" || (code !== 404 && code !== 405)) throw first;
          client = await attempt(() => new SSEClientTransport(url, { requestInit: { headers }, eventSourceInit: { fetch: withHeaders(headers) } }));
        }
      }
    } catch (cause) {
      const failures = (b?.failures ?? 0) + 1;
      const delay = Math.min(BACKOFF_START_MS * 2 ** (failures - 1), BACKOFF_MAX_MS);
      const code = (cause as { code?: number }).code;
      const lastError = typeof code === "number" ? `HTTP ${code}` : ((cause as NodeJS.ErrnoException).cause as NodeJS.ErrnoException | undefined)?.code ?? "connect failed";
      this.backoff.set(connection.id, { failures, retryAt: now + delay, lastError });
      this.opts.log.warn("remote vendor connect failed", { service: service.name, connectionId: connection.id, failures, error: lastError });
      throw new PoolError("vendor_unreachable", `${service.displayName} is unreachable (${lastError}); retrying after ${new Date(now + delay).toISOString()}`, {
        cause,
        retryAt: now + delay,
      });
    }
    this.backoff.delete(connection.id);
    let closedCb: (() => void) | undefined;
    client.onclose = () => closedCb?.();
    return {
      client,
      kind: "remote",
      pid: undefined,
      close: () => client.close(),
      kill: () => client.close(),
      onClosed: (cb) => (closedCb = cb),
    };
  }
}

/** A fetch that adds `headers` (the SSE GET stream does not use requestInit). */
function withHeaders(headers: Record<string, string>): typeof fetch {
  return (input, init) => {
    const h = new Headers(init?.headers);
    for (const [k, v] of Object.entries(headers)) h.set(k, v);
    return fetch(input, { ...init, headers: h });
  };
}
