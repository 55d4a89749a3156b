import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { parseRegistry, type Service } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { ChildLedger } from "../../src/pool/child-ledger.js";
import { PoolError } from "../../src/pool/errors.js";
import { ProductionLauncher, type VendorHandle } from "../../src/pool/launcher.js";
import { V2_STDIO_VENDOR_ARGS, VENDOR_STDIO_ARGS } from "../fixtures/paths.js";
import { type RemoteVendor, startRemoteVendor } from "../fixtures/remote-vendor.js";
import { startV2RemoteVendor, type V2RemoteVendor } from "../fixtures/v2-remote-vendor.js";
import { leaseOf } from "./fake-launcher.js";

// Both MCP eras through the broker's own launcher, against real SDK servers: a v2 vendor that
// serves only 2026-07-28, a dual-era v2 vendor, a v2 stdio vendor, and the v1 fixtures (2025 only).
// The registry's `protocol` picks what is spoken; a version mismatch is vendor_incompatible, with
// the versions named and no backoff; the era found is kept per service.

const TOKEN = "eras-token";
const bearer = { name: "Authorization", value: "Bearer {{token}}" };
const header = { kind: "header", name: "Authorization", value: `Bearer ${TOKEN}` } as const;

describe("vendors of both MCP eras", () => {
  let modern: V2RemoteVendor;
  let dual: V2RemoteVendor;
  let legacy: RemoteVendor;
  let dir: string;
  let clock: ManualClock;
  let launcher: ProductionLauncher;
  const handles: VendorHandle[] = [];

  beforeAll(async () => {
    modern = await startV2RemoteVendor({ eras: "modern", tokens: { [TOKEN]: "alice-modern" } });
    dual = await startV2RemoteVendor({ eras: "dual", tokens: { [TOKEN]: "alice-dual" } });
    legacy = await startRemoteVendor({ tokens: { [TOKEN]: "alice-v1" }, standaloneStream: false });
    dir = mkdtempSync(path.join(os.tmpdir(), "slaude-eras-"));
    clock = new ManualClock();
    launcher = new ProductionLauncher({
      baseEnv: { PATH: process.env.PATH ?? "" },
      runDir: path.join(dir, "vendors"),
      ledger: new ChildLedger(path.join(dir, "children")),
      clock,
      log: memoryLogger("debug"),
    });
  });
  afterAll(async () => {
    for (const h of handles) await h.close();
    await Promise.all([modern?.close(), dual?.close(), legacy?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  function remote(name: string, url: string, protocol?: string): Service {
    const entry = {
      transport: { type: "http", url, protocol: "streamable-http", credentialHeader: bearer },
      ...(protocol ? { protocol } : {}),
      capture: { strategy: "paste" },
    };
    return parseRegistry({ services: { [name]: entry } }, "eras-test").get(name)!;
  }
  function stdio(name: string, args: readonly string[], env: Record<string, string>, protocol?: string): Service {
    const transport = {
      type: "stdio",
      command: process.execPath,
      args: [...args],
      env,
      cwd: process.cwd(),
      credentialEnv: { VENDOR_TOKEN: "{{token}}" },
    };
    return parseRegistry(
      { services: { [name]: { transport, ...(protocol ? { protocol } : {}), capture: { strategy: "paste" } } } },
      "eras-test",
    ).get(name)!;
  }
  async function launch(service: Service, id: string): Promise<VendorHandle> {
    const base = leaseOf(id).connection;
    const secrets =
      service.entry.transport.type === "http" ? header : ({ kind: "env", env: { VENDOR_TOKEN: TOKEN } } as const);
    const h = await launcher.launch({ ...base, service: service.name }, service, secrets);
    handles.push(h);
    return h;
  }
  const whoami = async (h: VendorHandle) => (await h.client.callTool({ name: "whoami", arguments: {} })).content;
  const refusal = async (service: Service, id: string): Promise<PoolError> => {
    const err = await launch(service, id).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PoolError);
    return err as PoolError;
  };

  it("reaches a 2026-07-28-only remote vendor with the default auto: stateless, era recorded", async () => {
    const svc = remote("modern_only", modern.url);
    const h = await launch(svc, "M1");
    expect(await whoami(h)).toEqual([{ type: "text", text: "alice-modern" }]);
    expect(h.client.getProtocolEra()).toBe("modern");
    expect(launcher.eraOf("modern_only")).toEqual({
      version: "2026-07-28",
      era: "modern",
      protocol: "auto",
      at: clock.now(),
    });
    // Probed with server/discover, then every request names the revision: no initialize at all.
    expect(modern.requests.map((r) => r.method)).not.toContain("initialize");
    expect(modern.requests[0]).toEqual({ method: "server/discover", version: "2026-07-28" });
  });

  it("reaches a dual-era remote vendor with auto in the modern era, and with 2025-11-25 in the 2025 one", async () => {
    const auto = await launch(remote("dual_auto", dual.url, "auto"), "D1");
    expect(await whoami(auto)).toEqual([{ type: "text", text: "alice-dual" }]);
    expect(launcher.eraOf("dual_auto")?.version).toBe("2026-07-28");
    const pinned = await launch(remote("dual_2025", dual.url, "2025-11-25"), "D2");
    expect(await whoami(pinned)).toEqual([{ type: "text", text: "alice-dual" }]);
    expect(launcher.eraOf("dual_2025")).toMatchObject({ version: "2025-11-25", era: "legacy", protocol: "2025-11-25" });
  });

  it("keeps reaching v1 (2025-only) vendors: remote with auto falls back to initialize, stdio by default", async () => {
    const r = await launch(remote("v1_remote", legacy.url), "L1");
    expect(await whoami(r)).toEqual([{ type: "text", text: "alice-v1" }]);
    expect(launcher.eraOf("v1_remote")).toMatchObject({ era: "legacy", protocol: "auto" });
    const s = await launch(stdio("v1_stdio", VENDOR_STDIO_ARGS, { VENDOR_USER: "alice-stdio" }), "L2");
    expect(s.client.getProtocolEra()).toBe("legacy");
    expect(launcher.eraOf("v1_stdio")).toMatchObject({ era: "legacy", protocol: "2025-11-25" });
  });

  it("starts a v2 stdio vendor in the modern era with protocol auto (one that rejects the 2025 handshake)", async () => {
    const h = await launch(
      stdio("v2_stdio", V2_STDIO_VENDOR_ARGS, { V2_LEGACY: "reject", VENDOR_USER: "alice-v2-stdio" }, "auto"),
      "S1",
    );
    expect(await whoami(h)).toEqual([{ type: "text", text: "alice-v2-stdio" }]);
    expect(launcher.eraOf("v2_stdio")).toMatchObject({ version: "2026-07-28", era: "modern", protocol: "auto" });
    expect(h.pid).toBeGreaterThan(0);
  });

  it("a 2026-07-28-only vendor asked for 2025-11-25 is vendor_incompatible, naming the versions, with no backoff", async () => {
    const svc = remote("modern_as_2025", modern.url, "2025-11-25");
    const err = await refusal(svc, "X1");
    expect(err.code).toBe("vendor_incompatible");
    expect(err.detail).toBe("asked for 2025-11-25; the vendor speaks 2026-07-28");
    expect(launcher.backoffOf("X1")).toBeUndefined();
    expect(launcher.unavailableOf("X1")).toEqual({
      reason: "incompatible",
      since: clock.now(),
      lastError: "asked for 2025-11-25; the vendor speaks 2026-07-28",
    });
    // No backoff: the next start asks the vendor again at once (the clock has not moved).
    const before = modern.requests.length;
    expect((await refusal(svc, "X1")).code).toBe("vendor_incompatible");
    expect(modern.requests.length).toBeGreaterThan(before);
  });

  it("a 2025-only vendor pinned to 2026-07-28 is vendor_incompatible, for remote and for stdio", async () => {
    const r = await refusal(remote("v1_as_2026", legacy.url, "2026-07-28"), "X2");
    expect(r.code).toBe("vendor_incompatible");
    expect(r.detail).toBe("asked for 2026-07-28; the vendor speaks the 2025 era only");
    expect(launcher.backoffOf("X2")).toBeUndefined();
    const s = await refusal(stdio("v2_stdio_2025", V2_STDIO_VENDOR_ARGS, { V2_LEGACY: "reject" }), "X3");
    expect(s.code).toBe("vendor_incompatible");
    expect(s.detail).toBe("asked for 2025-11-25; the vendor speaks 2026-07-28");
    expect(launcher.unavailableOf("X3")?.reason).toBe("incompatible");
  });
});
