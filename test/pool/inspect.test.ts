// The launcher `registry inspect` uses is the broker's: allowlisted env, a private HOME under the
// data dir that is deleted afterwards, and (as root with SLAUDE_CHILD_UID_BASE) a uid outside the
// broker's child range. CI runs as root: this must run there.
import { chmodSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/clock/clock.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { renderCredential } from "../../src/pool/credential-template.js";
import { inspectionConnection, inspectionLauncher, readToolList } from "../../src/pool/inspect.js";
import { VENDOR_STDIO_PATH } from "../fixtures/paths.js";
import { TempDirs } from "../support/foundation.js";

const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

describe("inspectionLauncher", () => {
  it("runs the vendor like the broker does, under the uid just past the broker's range, and leaves nothing behind", async () => {
    // Fail, don't skip: the uid half proves nothing unless we are root.
    expect(process.geteuid?.()).toBe(0);
    const dir = tmp.make("slaude-inspect-");
    chmodSync(dir, 0o711); // a child under another uid must traverse to its HOME, as under a real data dir's parent
    const dataDir = path.join(dir, "data");
    const canary = "host-token-canary-7731";
    const config = loadConfig({ SLAUDE_DATA_DIR: dataDir, PATH: process.env.PATH, SLAUDE_HOST_TOKENS: canary, SLAUDE_CHILD_UID_BASE: "62000", SLAUDE_POOL_MAX_CHILDREN: "4" });
    const service = parseRegistry(
      { services: { vendor: { transport: { type: "stdio", command: process.execPath, args: ["--import", TSX_LOADER, VENDOR_STDIO_PATH], credentialEnv: { VENDOR_TOKEN: "{{token}}" } }, capture: { strategy: "paste" } } } },
      "test",
    ).get("vendor")!;
    const handle = await inspectionLauncher(config, systemClock, memoryLogger("warn")).launch(inspectionConnection(service, Date.now()), service, renderCredential(service, { kind: "fields", fields: { token: "vendor-token-1" } }));
    try {
      expect((await readToolList(handle.client)).map((t) => t.name)).toContain("env_dump");
      const res = await handle.client.callTool({ name: "env_dump", arguments: {} });
      const dump = JSON.parse((res.content as { text: string }[])[0]!.text) as { env: Record<string, string>; uid: number };
      expect(dump.uid).toBe(62_004);
      expect(dump.env["VENDOR_TOKEN"]).toBe("vendor-token-1");
      expect(dump.env["HOME"]!.startsWith(path.join(dataDir, "run", "inspect", "vendors") + path.sep)).toBe(true);
      expect(JSON.stringify(dump)).not.toContain(canary);
      expect(Object.keys(dump.env).sort()).toEqual(["HOME", "LOGNAME", "PATH", "TMPDIR", "USER", "VENDOR_TOKEN"]);
    } finally {
      await handle.close();
    }
    expect(readdirSync(path.join(dataDir, "run", "inspect", "vendors"))).toEqual([]);
  });
});
