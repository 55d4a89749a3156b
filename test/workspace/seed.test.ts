// The demo team is seeded once: a restart on the same database keeps what people changed.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, it } from "vitest";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { fixtureRegistryDoc } from "../integration/broker-harness.js";
import { testAppConfig } from "../support/app-config.js";

let dir: string | undefined;
let app: RunningApp | undefined;

afterEach(async () => {
  await app?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it("seeds the demo team on the first start only: a removed member stays removed across a restart, and the start-up log says so", async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "slaude-seed-"));
  const config = testAppConfig(dir, `host-${randomBytes(16).toString("hex")}`, { NODE_ENV: "development" });
  const start = async () => {
    const log = memoryLogger("info");
    app = await startApp({ config, log, registry: parseRegistry(fixtureRegistryDoc(), "test") });
    return log;
  };
  const first = await start();
  expect(first.lines.join("\n")).toMatch(/workspace: local .*"seeded":true/);
  const local = app!.workspace.local!;
  await local.setMember("C_GENERAL", "UBOB", false);
  await app!.close();
  app = undefined;

  const second = await start();
  expect(second.lines.join("\n")).toMatch(/workspace: local .*"seeded":false/);
  const again = app!.workspace.local!;
  expect((await again.users()).map((u) => u.id)).toEqual(["UALICE", "UBOB", "UCAROL"]);
  expect(await again.channels()).toEqual([{ id: "C_GENERAL", name: "general", members: ["UALICE", "UCAROL"] }]);
});
