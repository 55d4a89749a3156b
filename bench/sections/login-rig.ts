// The broker side of the login bench: a broker on its own data directory with the production
// login browsers, spare on or off, and the PSS of a login's Chromium processes.
import { randomBytes } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { type RunningApp, startApp } from "../../src/app/app.js";
import { loadConfig } from "../../src/config/env.js";
import type { ServiceRegistry } from "../../src/config/registry.js";
import { createLogger } from "../../src/log/logger.js";
import { type ChromiumLogins, chromiumLogins } from "../../src/login/browser/browser-factory.js";
import type { LoginBrowserFactory } from "../../src/login/login-service.js";

/** One broker under test: the app, its login browsers, and the processes of the login running now. */
export interface Rig {
  readonly app: RunningApp;
  readonly browsers: ChromiumLogins;
  current: { pids(): number[] } | undefined;
}

export function pssKb(pid: number): number {
  try {
    const m = /^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

export async function startRig(
  spare: boolean,
  dir: string,
  registry: ServiceRegistry,
  chromiumPath: string,
): Promise<Rig> {
  const data = path.join(dir, spare ? "spare" : "nospare");
  const homes = path.join(data, "login-browsers-bench");
  const config = loadConfig({
    NODE_ENV: "test",
    SLAUDE_DATA_DIR: data,
    PORT: "0",
    SLAUDE_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
    SLAUDE_PUBLIC_URL: "http://slaude.test",
    SLAUDE_LOGIN_SPARE_BROWSERS: spare ? "1" : "0",
    PATH: process.env.PATH ?? "",
  });
  mkdirSync(homes, { recursive: true });
  const log = createLogger("error");
  const browsers = chromiumLogins({
    chromiumPath,
    log,
    homesDir: homes,
    searchPath: config.childBaseEnv.PATH,
    spareBrowsers: config.login.spareBrowsers,
    registry: () => registry,
  });
  const rig: Rig = { app: undefined as unknown as RunningApp, browsers, current: undefined };
  // The production factory, wrapped only to see which processes belong to the login running now.
  const factory: LoginBrowserFactory = async (req) => {
    const b = await browsers.browsers(req);
    rig.current = b as unknown as { pids(): number[] };
    return b;
  };
  (rig as { app: RunningApp }).app = await startApp({ browsers: factory, log, config, registry });
  await browsers.sparesReady();
  return rig;
}
