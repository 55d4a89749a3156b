import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { BIN } from "../cli/run.js";
import { freePort } from "../support/ports.js";

// The broker as a new user starts it (`npm start` = `slaude-connect serve`), from the sources: no
// Slack, no services.json, no host tokens, a fresh data directory. The console link is read from
// the start-up block the process prints.

/** Debian's Chromium and the flags it needs here (root, headless, offline). */
export const CHROMIUM = "/usr/bin/chromium";
export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Where the browser tests save their screenshots (gitignored). */
export const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/console/", import.meta.url));

/** A running `serve` process. */
export interface ServeProcess {
  readonly proc: ChildProcess;
  readonly base: string;
  readonly consoleUrl: string;
  stderr(): string;
  stop(): Promise<void>;
}

/** Starts `serve` in `dir` (its cwd, so no services.json is found) and waits for the console link. */
export async function startServe(dir: string, extraEnv: Record<string, string> = {}): Promise<ServeProcess> {
  const port = await freePort();
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: dir,
    PORT: String(port),
    SLAUDE_DATA_DIR: path.join(dir, "data"),
    ...extraEnv,
  };
  const proc = spawn(process.execPath, [BIN, "serve"], {
    cwd: dir,
    env,
    stdio: ["ignore", "ignore", "pipe"],
    shell: false,
  });
  let err = "";
  proc.stderr!.setEncoding("utf8").on("data", (d: string) => (err = (err + d).slice(-200_000)));
  const exited = new Promise<void>((resolve) => proc.on("exit", () => resolve()));
  let dead = false;
  void exited.then(() => (dead = true));
  const deadline = Date.now() + 60_000;
  const linkPattern = /(http:\/\/127\.0\.0\.1:\d+)\/console\/\?token=[A-Za-z0-9_-]+/;
  let link = linkPattern.exec(err);
  while (!link) {
    if (dead) throw new Error(`serve exited during start-up:\n${err}`);
    if (Date.now() > deadline) throw new Error(`no console link printed in 60 s:\n${err}`);
    await new Promise((r) => setTimeout(r, 100));
    link = linkPattern.exec(err);
  }
  return {
    proc,
    base: link[1]!,
    consoleUrl: link[0],
    stderr: () => err,
    async stop() {
      if (!dead) proc.kill("SIGTERM");
      // A graceful stop is the expectation; a hung one must not hang the suite.
      const kill = setTimeout(() => proc.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(kill);
    },
  };
}
