import { errorMessage } from "../domain/errors.js";
import { buildBrokerStage } from "./build-broker.js";
import { buildCore } from "./build-core.js";
import { buildHttp } from "./build-http.js";
import { buildJobs, jobStarter } from "./build-jobs.js";
import { listen } from "./build-listen.js";
import { buildLogin } from "./build-login.js";
import { buildRelays } from "./build-relays.js";
import { buildTopology } from "./build-topology.js";
import { buildWorkspaceStage } from "./build-workspace.js";
import type { AppOptions, RunningApp } from "./running-app.js";
import { StopStack } from "./stop-stack.js";

export type { AppOptions, RunningApp } from "./running-app.js";

/**
 * The composition root: a sequence of builders, each building its part from config and the parts
 * before it, and returning its stop. Shutdown runs the stops in reverse: the console, the relays
 * (then every waiting approval is settled), the login side, the HTTP edges (drained), the jobs, the
 * broker (children killed), the leadership, and last the store. A builder that throws stops what
 * the builders before it started.
 */
export async function startApp(opts: AppOptions): Promise<RunningApp> {
  const stops = new StopStack();
  const core = stops.add(await buildCore(opts));
  const { log } = core;
  try {
    const topology = stops.add(buildTopology(core));
    const job = jobStarter(core, topology);
    const workspace = buildWorkspaceStage({ core, topology });
    const broker = stops.add(await buildBrokerStage({ core, topology, workspace }));
    const http = stops.add(await buildHttp({ core, workspace, broker }));
    const login = stops.add(await buildLogin({ core, topology, job, workspace, broker, http }));
    const parts = { core, topology, job, workspace, broker, http, login };
    stops.add(await buildRelays(parts));
    stops.add(buildJobs(parts));
    const served = stops.add(await listen(parts));
    const { store } = core;
    const built = workspace.workspace;
    let closing: Promise<void> | undefined;
    return {
      port: served.port,
      url: served.url,
      store,
      lifecycle: broker.lifecycle,
      broker: broker.broker,
      logins: login.logins,
      metrics: core.metrics,
      mcp: http.mcp,
      workspace: { kind: built.kind, ...(built.local ? { local: built.local } : {}) },
      events: http.events,
      hostToken: http.hostTokens.tokens[0],
      hostTokenFile: http.hostTokens.file,
      banner: served.banner,
      close: () => (closing ??= stops.stopAll().then(() => log.info("slaude-connect stopped"))),
    };
  } catch (err) {
    const failed = (e: unknown): void => {
      log.warn("a part started before the failure did not stop cleanly", { error: errorMessage(e) });
    };
    await stops.unwind(failed);
    throw err;
  }
}
