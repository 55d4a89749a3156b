import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { parseRegistry } from "../../src/config/registry.js";
import type { BrokerEvent } from "../../src/events/broker-event.js";
import { CallEventBus } from "../../src/events/event-bus.js";
import { Redactor } from "../../src/hygiene/redact.js";
import { memoryLogger } from "../../src/log/logger.js";
import { BACKOFF_START_MS } from "../../src/pool/availability.js";
import { ChildLedger } from "../../src/pool/child-ledger.js";
import { ProductionLauncher } from "../../src/pool/launcher.js";
import { type PoolLease, VendorPool } from "../../src/pool/pool.js";
import { type RemoteVendor, startRemoteVendor } from "../fixtures/remote-vendor.js";
import { leaseOf } from "../pool/fake-launcher.js";

// remote.unavailable / remote.recovered (issue 21 item 8): a real remote vendor over Streamable
// HTTP that goes away and comes back, the production launcher and pool on one event bus, and a
// clock advanced past the backoff. One unavailable per run of failures, one recovered when it ends.

const dirs: string[] = [];
const vendors: RemoteVendor[] = [];
const pools: VendorPool[] = [];
afterEach(async () => {
  for (const p of pools.splice(0)) await p.shutdown();
  for (const v of vendors.splice(0)) await v.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function remoteLease(url: string, token: string, id = "R1"): PoolLease {
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
    "remote-events-test",
  ).get("remote")!;
  const base = leaseOf(id);
  return {
    ...base,
    connection: { ...base.connection, service: "remote" },
    service,
    secrets: () => ({ kind: "header", name: "Authorization", value: `Bearer ${token}` }),
    redactor: new Redactor([token]),
  };
}

async function rig() {
  const v = await startRemoteVendor({ tokens: { tok: "alice" }, standaloneStream: false });
  vendors.push(v);
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-remote-events-"));
  dirs.push(dir);
  const clock = new ManualClock(Date.now());
  const log = memoryLogger("debug");
  const bus = new CallEventBus({ log });
  const seen: BrokerEvent[] = [];
  bus.subscribe((e) => void seen.push(e));
  const launcher = new ProductionLauncher({
    baseEnv: {},
    runDir: path.join(dir, "vendors"),
    ledger: new ChildLedger(path.join(dir, "children")),
    clock,
    log,
    events: bus,
  });
  const pool = new VendorPool(
    launcher,
    { maxChildren: 2, idleMs: 60_000, acquireTimeoutMs: 5_000 },
    clock,
    log,
    undefined,
    bus,
  );
  pools.push(pool);
  return { v, clock, pool, seen, types: () => seen.map((e) => ("reason" in e ? `${e.type}:${e.reason}` : e.type)) };
}

describe("remote vendor events", () => {
  it("unavailable once when connects start failing, nothing more while they keep failing, recovered when one works again", async () => {
    const { v, clock, pool, seen, types } = await rig();
    const lease = remoteLease(v.url, "tok");
    const whoami = () => pool.withLease(lease, (c) => c.callTool({ name: "whoami", arguments: {} }));
    await whoami();
    expect(types()).toEqual(["child.started"]);
    expect(seen[0]).toMatchObject({ teamId: "T1", connectionId: "R1", service: "remote", transport: "remote" });

    await v.stop();
    await expect(whoami()).rejects.toThrow();
    await pool.drop("R1", "kill", "crashed");
    // The connect fails: unavailable, with the backoff's retry time and the broker's error class.
    await expect(whoami()).rejects.toThrow(/unreachable/);
    const down = seen.find((e) => e.type === "remote.unavailable")!;
    expect(down).toMatchObject({
      reason: "backoff",
      connectionId: "R1",
      transport: "remote",
      retryAt: clock.now() + BACKOFF_START_MS,
    });
    expect(down.type === "remote.unavailable" && down.error).toMatch(/^[A-Za-z0-9_]+$/);
    // Refused inside the backoff, then failing again after it: still one unavailable event.
    await expect(whoami()).rejects.toThrow(/retrying after/);
    clock.advance(BACKOFF_START_MS + 1);
    await expect(whoami()).rejects.toThrow(/unreachable/);
    expect(seen.filter((e) => e.type === "remote.unavailable")).toHaveLength(1);

    await v.start();
    clock.advance(2 * BACKOFF_START_MS + 1);
    await whoami();
    expect(types().filter((t) => t.startsWith("remote."))).toEqual(["remote.unavailable:backoff", "remote.recovered"]);
    expect(types().at(-1)).toBe("child.started");
    // A healthy vendor that starts again after an ordinary stop is no recovery.
    await pool.drop("R1", "close", "idle");
    await whoami();
    expect(types().filter((t) => t === "remote.recovered")).toHaveLength(1);
  });

  it("a rejected credential is unavailable as credential_rejected, once", async () => {
    const { v, pool, seen } = await rig();
    const lease = remoteLease(v.url, "wrong-token", "R2");
    for (let i = 0; i < 2; i++) await expect(pool.withLease(lease, async () => {})).rejects.toThrow(/rejected/);
    const down = seen.filter((e) => e.type === "remote.unavailable");
    expect(down).toHaveLength(1);
    expect(down[0]).toMatchObject({ reason: "credential_rejected", connectionId: "R2", retryAt: null });
    expect(JSON.stringify(seen)).not.toContain("wrong-token");
  });
});
