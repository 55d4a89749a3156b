import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { memoryLogger } from "../../src/log/logger.js";
import type { ToolDefinition } from "../../src/pinning/definition.js";
import { PIN_READ_AHEAD_MAX_MS, PinService } from "../../src/pinning/service.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { ToolPinRepo } from "../../src/store/store.js";
import { linkedVendor } from "../support/linked-vendor.js";

// The pin the call path reads ahead, while its write-ahead row commits (PinService.read): the
// run-stage check uses it only when this service wrote no pin since, so a vendor started for the
// call (which records its tools first) and an admin's decision in between are always seen. A real
// SQLite store, real SDK clients and servers over in-memory transports.

const scope = { teamId: "T1", service: "svc" };
const call = { tool: "t", planned: "pinned" as const, ownConnection: false, trustNewTools: false };
const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

/** A pin service on a fresh SQLite file; `hold` delays every pin write until it resolves. */
function service(hold?: Promise<void>) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-pin-ahead-"));
  const { store } = openSqliteStore(path.join(dir, "s.db"));
  closers.push(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const real = store.toolPins;
  const toolPins: ToolPinRepo = {
    get: vi.fn((...a: Parameters<ToolPinRepo["get"]>) => real.get(...a)),
    list: (...a) => real.list(...a),
    undecided: (...a) => real.undecided(...a),
    update: async (...a) => {
      await hold;
      return real.update(...a);
    },
  };
  const pins = new PinService({ store: { toolPins }, clock: new ManualClock(), log: memoryLogger("debug") });
  // Another replica's pin service on the same store: its writes are not this one's.
  const elsewhere = new PinService({ store: { toolPins }, clock: new ManualClock(), log: memoryLogger("debug") });
  return { pins, elsewhere, gets: toolPins.get as ReturnType<typeof vi.fn> };
}

/** A vendor serving tool `t` with the description `definition.text` (changeable, then announced). */
async function vendor(pins: PinService) {
  const definition = { text: "v1" };
  const { client, close } = await linkedVendor();
  closers.push(close);
  const read = async (): Promise<ToolDefinition[]> => [{ name: "t", description: definition.text }];
  const watch = () => pins.watchVendor(client, { scope, read, stop: async () => {} });
  return { client, definition, watch };
}

describe("the pin read ahead of the run-stage check", () => {
  it("is used when no pin was written since: the check reads the store no second time", async () => {
    const { pins, gets } = service();
    const v = await vendor(pins);
    await v.watch();
    const ahead = pins.read(scope, "t");
    expect(ahead).toBeDefined();
    await pins.verify(v.client, scope, call, ahead);
    expect(gets).toHaveBeenCalledTimes(1);
  });

  it("is not used once the vendor started for the call recorded its tools: the recorded pin is checked", async () => {
    const { pins } = service();
    const v = await vendor(pins);
    const ahead = pins.read(scope, "t");
    expect(await ahead?.pin).toBeUndefined();
    await v.watch(); // first reading: t is pinned
    await expect(pins.verify(v.client, scope, call, ahead)).resolves.toBeUndefined();
  });

  it("is not used after an admin's decision in between: an accept since lets the call run", async () => {
    const { pins } = service();
    const v = await vendor(pins);
    await v.watch();
    v.definition.text = "v2"; // the vendor changes t: quarantined until an admin decides
    await pins.relistAll([v.client]);
    const ahead = pins.read(scope, "t");
    expect((await ahead?.pin)?.status).toBe("quarantined");
    const decided = await pins.decide(scope, { kind: "accept", tool: "t", by: "U_ADMIN" });
    expect(decided).toMatchObject({ pin: { status: "pinned" } });
    await expect(pins.verify(v.client, scope, call, ahead)).resolves.toBeUndefined();
  });

  it("is not used once older than its bound: an accept on another replica while the call waited is seen", async () => {
    const { pins, elsewhere } = service();
    const v = await vendor(pins);
    await v.watch();
    v.definition.text = "v2";
    await pins.relistAll([v.client]);
    const ahead = pins.read(scope, "t");
    expect((await ahead?.pin)?.status).toBe("quarantined");
    expect(await elsewhere.decide(scope, { kind: "accept", tool: "t", by: "U_ADMIN" })).toMatchObject({
      pin: { status: "pinned" },
    });
    // The call waited (a pool slot, say) past the bound: the pin is read again, and the accept holds.
    await new Promise((r) => setTimeout(r, PIN_READ_AHEAD_MAX_MS + 20));
    await expect(pins.verify(v.client, scope, call, ahead)).resolves.toBeUndefined();
  });

  it("is not read while a pin write is under way", async () => {
    let release!: () => void;
    const { pins, gets } = service(new Promise<void>((r) => (release = r)));
    const v = await vendor(pins);
    const watching = v.watch();
    await new Promise((r) => setImmediate(r));
    expect(pins.read(scope, "t")).toBeUndefined();
    expect(gets).not.toHaveBeenCalled();
    release();
    await watching;
    expect(pins.read(scope, "t")).toBeDefined();
  });
});
