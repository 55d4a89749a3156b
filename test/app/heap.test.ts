import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { heapGrowthChosen } from "../../src/app/heap.js";

const CHURN = fileURLToPath(new URL("../fixtures/heap-churn.ts", import.meta.url));

/** Runs the churn fixture in its own node process with `flags`; its JSON line. */
async function churn(flags: readonly string[], mode: "serving" | "plain") {
  const { stdout } = await promisify(execFile)(process.execPath, [...flags, "--import", "tsx", CHURN, mode], {
    timeout: 60_000,
  });
  return JSON.parse(stdout.trim()) as { set: boolean; live: number; peakOldMb: number };
}

describe("the serving heap setting", () => {
  it("keeps the old generation near its live size while garbage churns through it", async () => {
    const [plain, serving] = await Promise.all([churn([], "plain"), churn([], "serving")]);
    expect(serving.set).toBe(true);
    // About 55 MB live: V8's own choice let the old space grow to about 245 MB here, the setting (20%) to about 80.
    // (Relative, not absolute: under load a concurrent marking can finish a little past the limit.)
    expect(serving.peakOldMb).toBeLessThan(plain.peakOldMb * 0.6);
  }, 120_000);

  it("leaves a growth chosen on the command line alone", async () => {
    const [chosen, serving] = await Promise.all([
      churn(["--heap-growing-percent=300"], "serving"),
      churn([], "serving"),
    ]);
    expect(chosen.set).toBe(false);
    expect(chosen.peakOldMb).toBeGreaterThan(serving.peakOldMb / 0.6);
    expect(heapGrowthChosen(["--heap_growing_percent=50"])).toBe(true);
    expect(heapGrowthChosen(["--heap-growing-percent", "50"])).toBe(true);
    expect(heapGrowthChosen(["--heap-growing-percentage=5", "--max-semi-space-size=4"])).toBe(false);
  }, 120_000);
});
