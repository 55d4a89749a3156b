import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { parseRegistry } from "../../src/config/registry.js";
import { Redactor } from "../../src/hygiene/redact.js";
import { memoryLogger } from "../../src/log/logger.js";
import { ChildLedger } from "../../src/pool/child-ledger.js";
import { ProductionLauncher } from "../../src/pool/launcher.js";
import { type PoolLease, VendorPool } from "../../src/pool/pool.js";
import { type RemoteVendor, startRemoteVendor } from "../fixtures/remote-vendor.js";
import { FakeLauncher, leaseOf } from "./fake-launcher.js";

// The pool with remote vendors: a lost session leaves the pool by itself (the next lease opens a
// new one), and the idle timer counts only calls that worked, so an agent retrying a broken
// vendor faster than the idle period cannot keep it alive.

const dirs: string[] = [];
const vendors: RemoteVendor[] = [];
const pools: VendorPool[] = [];

afterEach(async () => {
  for (const p of pools.splice(0)) await p.shutdown();
  for (const v of vendors.splice(0)) await v.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function remoteLease(url: string, token: string): PoolLease {
  const service = parseRegistry(
    {
      services: {
        remote: {
          transport: {
            type: "http",
            url,
            protocol: "streamable-http",
            credentialHeader: { name: "Authorization", value: "Bearer {{token}}" },
          },
          capture: { strategy: "paste" },
        },
      },
    },
    "remote-pool-test",
  ).get("remote")!;
  const base = leaseOf("R1");
  return {
    ...base,
    connection: { ...base.connection, service: "remote" },
    service,
    secrets: () => ({ kind: "header", name: "Authorization", value: `Bearer ${token}` }),
    redactor: new Redactor([token]),
  };
}

describe("the pool with remote vendors", () => {
  it("drops a remote session the server forgot, by itself; the next lease opens a new session", async () => {
    const v = await startRemoteVendor({ tokens: { tok: "alice" }, standaloneStream: false });
    vendors.push(v);
    const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-remote-pool-"));
    dirs.push(dir);
    const clock = new ManualClock();
    const log = memoryLogger("debug");
    const launcher = new ProductionLauncher({
      baseEnv: {},
      runDir: path.join(dir, "vendors"),
      ledger: new ChildLedger(path.join(dir, "children")),
      clock,
      log,
    });
    const pool = new VendorPool(launcher, { maxChildren: 2, idleMs: 60_000, acquireTimeoutMs: 5_000 }, clock, log);
    pools.push(pool);
    const lease = remoteLease(v.url, "tok");
    const whoami = () => pool.withLease(lease, (client) => client.callTool({ name: "whoami", arguments: {} }));

    expect((await whoami()).content).toEqual([{ type: "text", text: "alice" }]);
    await v.forgetSessions();
    await expect(whoami()).rejects.toThrow();
    await vi.waitFor(() => expect(pool.has("R1")).toBe(false));
    expect(log.lines.some((l) => l.includes("remote vendor session lost") && l.includes("session_not_found"))).toBe(
      true,
    );

    expect((await whoami()).content).toEqual([{ type: "text", text: "alice" }]);
    expect(pool.stats().spawned).toBe(2);
  });

  it("failing calls do not reset the idle timer: a vendor with no call that worked for idleMs is reaped", async () => {
    const clock = new ManualClock();
    const pool = new VendorPool(
      new FakeLauncher(),
      { maxChildren: 2, idleMs: 60_000, acquireTimeoutMs: 5_000 },
      clock,
      memoryLogger("warn"),
    );
    pools.push(pool);
    await pool.withLease(leaseOf("A"), async () => {});
    // An agent retrying every 20 s; every call fails.
    for (let i = 0; i < 3; i++) {
      clock.advance(20_000);
      await expect(pool.withLease(leaseOf("A"), async () => Promise.reject(new Error("broken")))).rejects.toThrow(
        "broken",
      );
    }
    expect(await pool.reapIdle()).toBe(1);
    expect(pool.has("A")).toBe(false);
  });

  it("a call that worked keeps the vendor: it is reaped idleMs after that call, not before", async () => {
    const clock = new ManualClock();
    const pool = new VendorPool(
      new FakeLauncher(),
      { maxChildren: 2, idleMs: 60_000, acquireTimeoutMs: 5_000 },
      clock,
      memoryLogger("warn"),
    );
    pools.push(pool);
    await pool.withLease(leaseOf("A"), async () => {});
    clock.advance(50_000);
    await pool.withLease(leaseOf("A"), async () => {});
    clock.advance(50_000);
    expect(await pool.reapIdle()).toBe(0);
    clock.advance(10_000);
    expect(await pool.reapIdle()).toBe(1);
  });
});
