import path from "node:path";
import type { Logger } from "../log/logger.js";
import { BrowserHomes } from "../login/browser/browser-homes.js";
import { sweepInspections } from "../pool/inspect-run.js";

// What an earlier run left behind (a SIGKILL of the broker, an interrupted `registry inspect`) dies
// before anything new starts: those processes may still hold a credential they were given.

/** Kills leftover login browsers and inspect vendors; returns the login browsers' homes for the new run. */
export async function sweepLeftovers(dataDir: string, log: Logger): Promise<BrowserHomes> {
  const browserHomes = new BrowserHomes(path.join(dataDir, "login-browsers"));
  const browsers = await browserHomes.sweep();
  if (browsers) log.warn("killed login browser processes left by an earlier run", { processes: browsers });
  const inspections = sweepInspections(dataDir);
  if (inspections)
    log.warn("killed vendor processes an interrupted registry inspect left running", { processes: inspections });
  return browserHomes;
}
