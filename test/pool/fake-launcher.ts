// An in-memory VendorLauncher: each launch is a real MCP SDK server and client over
// InMemoryTransport (no process), so pool bookkeeping (cap, idle reaping, waits, eviction, crashes)
// is tested in milliseconds. Launches can be held open, failed, and vendors crashed on demand.
import { Client, InMemoryTransport } from "@modelcontextprotocol/client";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { parseRegistry, type Service } from "../../src/config/registry.js";
import { Redactor } from "../../src/hygiene/redact.js";
import type { RenderedCredential } from "../../src/pool/credential-template.js";
import type { VendorHandle, VendorLauncher } from "../../src/pool/launcher.js";
import type { PoolLease } from "../../src/pool/pool.js";
import type { Connection } from "../../src/store/records.js";

/** One vendor the fake started. */
export interface FakeVendor {
  readonly connectionId: string;
  readonly secrets: RenderedCredential;
  stopped: "close" | "kill" | undefined;
  /** The vendor goes away on its own (a crash): the pool is told through onClosed. */
  crash(): void;
}

/** A launcher of in-memory vendors. */
export class FakeLauncher implements VendorLauncher {
  readonly started: FakeVendor[] = [];
  private hold: Promise<void> | undefined;
  private release: (() => void) | undefined;
  private failures: Error[] = [];

  /** Launches wait until `open()` (a vendor slow to start). */
  holdLaunches(): void {
    this.hold = new Promise((r) => (this.release = r));
  }

  open(): void {
    this.release?.();
    this.hold = undefined;
  }

  /** The next launch fails with `err`. */
  failNext(err: Error): void {
    this.failures.push(err);
  }

  /** Vendors started and not stopped or crashed. */
  live(): FakeVendor[] {
    return this.started.filter((v) => v.stopped === undefined);
  }

  spawnsOf(connectionId: string): number {
    return this.started.filter((v) => v.connectionId === connectionId).length;
  }

  async launch(connection: Connection, _service: Service, secrets: RenderedCredential): Promise<VendorHandle> {
    if (this.hold) await this.hold;
    const failure = this.failures.shift();
    if (failure) throw failure;
    const server = new McpServer({ name: "fake-vendor", version: "1" });
    server.registerTool("echo", { inputSchema: { text: z.string() } }, async ({ text }) => ({
      content: [{ type: "text", text }],
    }));
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(b);
    const client = new Client({ name: "pool-test", version: "1" });
    await client.connect(a);
    let closed: (() => void) | undefined;
    const vendor: FakeVendor = {
      connectionId: connection.id,
      secrets,
      stopped: undefined,
      crash: () => {
        vendor.stopped = "kill";
        closed?.();
      },
    };
    this.started.push(vendor);
    const stop = async (how: "close" | "kill") => {
      vendor.stopped ??= how;
      await client.close();
    };
    return {
      client,
      kind: "stdio",
      pid: undefined,
      close: () => stop("close"),
      kill: () => stop("kill"),
      onClosed: (cb) => (closed = cb),
    };
  }
}

/** The service every fake lease is for. */
export const FAKE_SERVICE: Service = parseRegistry(
  {
    services: {
      fake: {
        transport: { type: "stdio", command: "/bin/false", credentialEnv: { TOKEN: "{{token}}" } },
        capture: { strategy: "paste" },
      },
    },
  },
  "fake-registry",
).get("fake")!;

/** A lease of connection `id` (credential version `version`) in team `teamId`. */
export function leaseOf(id: string, version = "v1", teamId = "T1"): PoolLease {
  const connection: Connection = {
    id,
    teamId,
    ownerUserId: "U1",
    service: "fake",
    scope: "user",
    channelId: null,
    threadTs: null,
    status: "active",
    sealed: null,
    label: null,
    createdBy: "U1",
    createdAt: 0,
    updatedAt: 0,
    expiresAt: Number.MAX_SAFE_INTEGER,
    endedAt: null,
    endedReason: null,
  };
  return {
    connection,
    service: FAKE_SERVICE,
    version,
    redactor: new Redactor([]),
    secrets: () => ({ kind: "env", env: { TOKEN: `token-${id}-${version}` } }),
  };
}
