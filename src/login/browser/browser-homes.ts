// The broker's record of its login browsers: each Chromium gets a HOME directory made under one
// directory of the data dir before the browser starts, and every process of that browser carries
// it (see process-tree.ts). So the directory itself is the ledger: after a SIGKILL of the broker,
// the next start finds every browser it left running by its HOME, kills them and deletes the homes.
// Homes of other brokers (another data dir, or the system temp dir) are never touched.
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { setTimeout as pace } from "node:timers/promises";
import { browserProcesses, findBrowserPid, isSameProcess, killAll } from "./process-tree.js";

/** The prefix ConfinedBrowser gives each HOME directory it makes. */
const HOME_PREFIX = "slaude-login-";
/** Kill rounds before giving up on a process that will not die (a D-state process, for one). */
const SWEEP_ROUNDS = 50;

/** Where this broker's login browsers keep their HOME directories, and the start-up sweep of leftovers. */
export class BrowserHomes {
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /**
   * Kills every process of browsers an earlier run left behind and deletes their homes; returns how
   * many processes were killed. Call before this run starts any browser: every home here is stale.
   */
  async sweep(): Promise<number> {
    const killed = new Set<number>();
    for (const name of readdirSync(this.dir)) {
      if (!name.startsWith(HOME_PREFIX)) continue;
      const home = path.join(this.dir, name);
      const root = findBrowserPid(home);
      for (let round = 0; round < SWEEP_ROUNDS; round++) {
        const left = browserProcesses(root, home);
        if (left.length === 0) break;
        for (const pid of left) killed.add(pid);
        // Playwright starts the browser detached: its group holds the renderers, crashpad lives outside it.
        killAll(left, round === 0 && root && isSameProcess(root) ? root.pid : undefined);
        // Paces real processes dying: real time, never a clock's.
        await pace(20);
      }
      rmSync(home, { recursive: true, force: true, maxRetries: 3 });
    }
    return killed.size;
  }
}
