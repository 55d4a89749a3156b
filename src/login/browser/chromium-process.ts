// One Chromium process for one login: started with a throw-away HOME (the marker of every process
// it starts, see process-tree.ts) and a fresh temporary profile, never shared between logins. A
// cold login starts one with its own allowlist on the command line; a spare (spare-browsers.ts)
// starts one ahead of time with the allowlist left to the login's browser context.
import { accessSync, constants as fsConstants, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type Browser, chromium } from "playwright-core";
import { browserEnv } from "./confinement.js";
import { ConfinedBrowserError } from "./errors.js";
import { type BrowserPid, findBrowserPid } from "./process-tree.js";

/** Playwright's own bound on Chromium's start. */
const START_TIMEOUT_MS = 20_000;
const DEFAULT_SEARCH_PATH = "/usr/bin:/bin";

/** Where and how to start one Chromium process. */
export interface ChromiumLaunch {
  /** The Chromium executable, e.g. Debian's /usr/bin/chromium. */
  readonly chromiumPath: string;
  /** The whole command line past Playwright's own flags (confinement.ts builds it). */
  readonly args: readonly string[];
  /** Where the HOME directory is made (default the system temp dir): a directory its owner sweeps after a crash. */
  readonly homeParent?: string | undefined;
  /** Chromium's PATH (config/ decides it); default "/usr/bin:/bin". */
  readonly searchPath?: string | undefined;
}

/** A started Chromium: the process, its pid (with start time) and its HOME. Owned by exactly one login, or by the spare pool until handed over. */
export interface ChromiumProcess {
  readonly browser: Browser;
  readonly browserPid: BrowserPid | undefined;
  readonly homeDir: string;
}

/** Starts Chromium headless with `l.args`; throws ConfinedBrowserError("launch_failed"), leaving nothing behind. */
export async function launchChromium(l: ChromiumLaunch): Promise<ChromiumProcess> {
  try {
    // Checked here because Playwright leaks its temporary directories when the executable is missing.
    accessSync(l.chromiumPath, fsConstants.X_OK);
  } catch (err) {
    throw new ConfinedBrowserError("launch_failed", `Chromium is not an executable at ${l.chromiumPath}`, {
      cause: err,
    });
  }
  // Chromium's HOME: crashpad's database and anything else it writes outside the profile land
  // here, and it marks every process of this browser (see process-tree.ts).
  const homeDir = mkdtempSync(path.join(l.homeParent ?? os.tmpdir(), "slaude-login-"));
  try {
    const browser = await chromium.launch({
      executablePath: l.chromiumPath,
      headless: true,
      // Root cannot use Chromium's sandbox; anyone else keeps it.
      chromiumSandbox: process.getuid?.() !== 0,
      args: [...l.args],
      env: browserEnv(homeDir, l.searchPath ?? DEFAULT_SEARCH_PATH),
      // The owner closes browsers on shutdown; Playwright's own SIGINT handler would exit the broker.
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
      timeout: START_TIMEOUT_MS,
    });
    return { browser, browserPid: findBrowserPid(homeDir), homeDir };
  } catch (err) {
    rmSync(homeDir, { recursive: true, force: true });
    throw new ConfinedBrowserError("launch_failed", `Chromium did not start (${l.chromiumPath})`, { cause: err });
  }
}
