// The launcher `registry inspect` uses is the broker's: allowlisted env, a private HOME under the
// data dir that is deleted afterwards, and (as root with SLAUDE_CHILD_UID_BASE) a uid outside the
// broker's child range. CI runs as root: this must run there.
import { chmodSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { inspectionLauncher } from "../../src/app/launcher.js";
import { systemClock } from "../../src/clock/clock.js";
import { loadConfig } from "../../src/config/env.js";
import { parseRegistry } from "../../src/config/registry.js";
import { memoryLogger } from "../../src/log/logger.js";
import { renderCredential } from "../../src/pool/credential-template.js";
import { PoolError } from "../../src/pool/errors.js";
import { inspectionConnection, listVendorTools, readToolList } from "../../src/pool/inspect.js";
import { HOSTILE_VENDOR_PATH, VENDOR_STDIO_PATH } from "../fixtures/paths.js";
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
    const config = loadConfig({
      SLAUDE_DATA_DIR: dataDir,
      PATH: process.env.PATH,
      SLAUDE_HOST_TOKENS: canary,
      SLAUDE_CHILD_UID_BASE: "62000",
      SLAUDE_POOL_MAX_CHILDREN: "4",
    });
    const service = parseRegistry(
      {
        services: {
          vendor: {
            transport: {
              type: "stdio",
              command: process.execPath,
              args: ["--import", TSX_LOADER, VENDOR_STDIO_PATH],
              credentialEnv: { VENDOR_TOKEN: "{{token}}" },
            },
            capture: { strategy: "paste" },
          },
        },
      },
      "test",
    ).get("vendor")!;
    const run = inspectionLauncher(config, systemClock, memoryLogger("warn"));
    const handle = await run.launch(
      inspectionConnection(service, Date.now()),
      service,
      renderCredential(service, { kind: "fields", fields: { token: "vendor-token-1" } }),
    );
    try {
      expect((await readToolList(handle.client)).map((t) => t.name)).toContain("env_dump");
      const res = await handle.client.callTool({ name: "env_dump", arguments: {} });
      const dump = JSON.parse((res.content as { text: string }[])[0]!.text) as {
        env: Record<string, string>;
        uid: number;
      };
      expect(dump.uid).toBe(62_004);
      expect(dump.env.VENDOR_TOKEN).toBe("vendor-token-1");
      expect(dump.env.HOME!.startsWith(path.join(run.dir, "vendors") + path.sep)).toBe(true);
      expect(path.dirname(run.dir)).toBe(path.join(dataDir, "run", "inspect"));
      expect(JSON.stringify(dump)).not.toContain(canary);
      expect(Object.keys(dump.env).sort()).toEqual(["HOME", "LOGNAME", "PATH", "TMPDIR", "USER", "VENDOR_TOKEN"]);
    } finally {
      await handle.close();
    }
    expect(readdirSync(path.join(run.dir, "vendors"))).toEqual([]);
    run.close();
    expect(readdirSync(path.join(dataDir, "run", "inspect"))).toEqual([]);
  });

  it("reads tools/list through the broker's bounded reader: a repeated cursor or a page over the byte limit is refused, not collected", async () => {
    const config = loadConfig({
      SLAUDE_DATA_DIR: path.join(tmp.make("slaude-inspect-"), "data"),
      PATH: process.env.PATH,
    });
    for (const mode of ["repeat", "huge"]) {
      const service = parseRegistry(
        {
          services: {
            vendor: {
              transport: {
                type: "stdio",
                command: process.execPath,
                args: ["--import", TSX_LOADER, HOSTILE_VENDOR_PATH],
                env: { HOSTILE_TOOLS_LIST: mode },
                credentialEnv: { VENDOR_TOKEN: "{{token}}" },
              },
              capture: { strategy: "paste" },
            },
          },
        },
        "test",
      ).get("vendor")!;
      const run = inspectionLauncher(config, systemClock, memoryLogger("warn"));
      const err = await listVendorTools(run, inspectionConnection(service, Date.now()), service, {
        kind: "fields",
        fields: { token: "t" },
      }).then(
        () => undefined,
        (e: unknown) => e,
      );
      run.close();
      expect(err, mode).toBeInstanceOf(PoolError);
      expect((err as PoolError).code).toBe("vendor_misbehaved");
    }
  });
});
