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
    const w = buildWorkspaceStage(core, topology);
    const b = stops.add(await buildBrokerStage(core, topology, w));
    const h = stops.add(await buildHttp(core, w, b));
    const l = stops.add(await buildLogin(core, topology, w, b, h, job));
    stops.add(await buildRelays(core, topology, w, b, h, l, job));
    stops.add(buildJobs(core, w, b, job));
    const served = stops.add(await listen(core, topology, w, b, h, l));
    const { store } = core;
    let closing: Promise<void> | undefined;
    return {
      ...{ port: served.port, url: served.url, banner: served.banner, store, lifecycle: b.lifecycle, broker: b.broker },
      ...{ logins: l.logins, metrics: core.metrics, mcp: h.mcp, events: h.events },
      workspace: { kind: w.workspace.kind, ...(w.workspace.local ? { local: w.workspace.local } : {}) },
      hostToken: h.hostTokens.tokens[0],
      hostTokenFile: h.hostTokens.file,
      close: () => (closing ??= stops.stopAll().then(() => log.info("slaude-connect stopped"))),
    };
  } catch (err) {
    await stops.unwind((e) => log.warn("a part started before the failure did not stop cleanly", { error: (e as Error).message }));
    throw err;
  }
}
