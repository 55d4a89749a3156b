// `doctor` where a newcomer first runs it: an empty directory, development, no services.json. Its
// fix for the registry must work from there (the catalog is inside the package, not the
// directory), and the running-as-root warning is said once.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, expect, it } from "vitest";
import { newKeyB64, TempDirs } from "../support/foundation.js";
import { runBin } from "./run.js";

const tmp = new TempDirs();
afterEach(() => tmp.cleanup());

const CATALOG = fileURLToPath(new URL("../../services.example.json", import.meta.url));

it("in an empty directory names the package's own services.example.json, a fix that works as printed, and warns about root once", async () => {
  const cwd = tmp.make();
  expect(readdirSync(cwd)).toEqual([]);
  const env = {
    NODE_ENV: "development",
    SLAUDE_DATA_DIR: path.join(tmp.make(), "data"),
    SLAUDE_ENCRYPTION_KEY: newKeyB64(),
  };
  const r = await runBin(["doctor"], env, { cwd });
  expect(r.code, r.stderr).toBe(0);
  const lines = r.stdout.split("\n");
  const at = lines.findIndex((l) => l.startsWith("WARN  service registry:"));
  expect(at, r.stdout).toBeGreaterThanOrEqual(0);
  const fix = lines[at + 1]!.trim();
  expect(fix).toBe(
    `fix: cp ${CATALOG} ${path.join(cwd, "services.json")} (then keep the services you use), or set SLAUDE_REGISTRY_PATH`,
  );
  expect(existsSync(CATALOG)).toBe(true);

  // Said once, by the process-user check (this machine's tests may run as root or not).
  const rootLines = lines.filter((l) => /running as root/.test(l));
  expect(rootLines, r.stdout).toHaveLength(process.geteuid?.() === 0 ? 1 : 0);

  // The fix, run as printed from that directory, gives doctor a registry it accepts.
  execFileSync("/bin/sh", ["-c", fix.slice("fix: ".length).split(" (then")[0]!], { cwd });
  const again = await runBin(["doctor"], env, { cwd });
  expect(again.stdout).toMatch(
    new RegExp(
      `^ok {4}service registry: ${path.join(cwd, "services.json").replace(/[.]/g, "\\.")}: \\d+ service\\(s\\)`,
      "m",
    ),
  );
});
