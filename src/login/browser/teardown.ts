// Teardown of a confined browser: close it gracefully, kill what is left of it (by process group,
// by descent and by its HOME marker, see process-tree.ts) and delete its HOME directory.
import { rmSync } from "node:fs";
import { setTimeout as pace } from "node:timers/promises";
import type { Browser } from "playwright-core";
import type { Clock } from "../../clock/clock.js";
import { errorMessage } from "./hooks.js";
import { type BrowserPid, browserProcesses, isRunning, isSameProcess, killAll } from "./process-tree.js";

/** How long a graceful close may take before the process tree is killed. */
const CLOSE_GRACE_MS = 3_000;
/** Kill rounds before giving up on a process that will not die (a D-state process, for one). */
const KILL_ROUNDS = 100;
/** Pause between kill rounds: paces real processes dying, so it is real time, never the clock's. */
const KILL_PACE_MS = 20;

/** What teardown needs to know about one browser. */
export interface BrowserRemains {
  readonly browser: Browser;
  readonly browserPid: BrowserPid | undefined;
  readonly homeDir: string;
}

/**
 * Closes the browser; if that takes over CLOSE_GRACE_MS on `clock`, SIGKILLs its process group.
 * Either way it then kills whatever is left of it (the crashpad handlers live outside the group)
 * and deletes its HOME. Playwright deletes the profile directory itself once the browser has exited.
 */
export async function terminate(
  r: BrowserRemains,
  clock: Clock,
  warn: (msg: string, f?: Record<string, unknown>) => void,
): Promise<void> {
  const known = browserProcesses(r.browserPid, r.homeDir);
  const closed = r.browser.close().then(
    () => true,
    (err: unknown) => {
      warn("login browser close failed", { error: errorMessage(err) });
      return false;
    },
  );
  const graceful = await within(closed, CLOSE_GRACE_MS, false, clock);
  if (!graceful) warn("login browser did not close in time; killing its processes", { pid: r.browserPid?.pid });
  for (let round = 0; round < KILL_ROUNDS; round++) {
    const left = [...new Set([...known.filter(isRunning), ...browserProcesses(r.browserPid, r.homeDir)])];
    if (left.length === 0) break;
    // The group is the browser's pid (Playwright starts it detached); kill it only while that pid is still ours.
    killAll(
      left,
      !graceful && round === 0 && r.browserPid && isSameProcess(r.browserPid) ? r.browserPid.pid : undefined,
    );
    await pace(KILL_PACE_MS);
  }
  // Playwright notices the exit and removes its profile directory; wait for that, briefly.
  await within(closed, CLOSE_GRACE_MS, false, clock);
  rmSync(r.homeDir, { recursive: true, force: true, maxRetries: 3 });
}

/** `p`'s value, or `fallback` if it has not settled within `ms` on `clock`. */
async function within<T>(p: Promise<T>, ms: number, fallback: T, clock: Clock): Promise<T> {
  let timer: { cancel(): void } | undefined;
  const timeout = new Promise<T>((resolve) => {
    timer = clock.setTimeout(() => resolve(fallback), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    timer?.cancel();
  }
}

/** terminate() for a browser no login is using (a spare): never rejects, a failure is only logged. */
export function stopChromium(
  r: BrowserRemains,
  clock: Clock,
  warn: (msg: string, f?: Record<string, unknown>) => void,
): Promise<void> {
  return terminate(r, clock, warn).catch((err: unknown) =>
    warn("login browser teardown failed", { error: errorMessage(err) }),
  );
}
