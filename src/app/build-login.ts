import { envSecretSource } from "../config/env.js";
import { chromiumLogins } from "../login/browser/browser-factory.js";
import { LoginService, type LoginBrowserFactory } from "../login/login-service.js";
import { deviceGrants } from "../login/oauth/device.js";
import { oauthFlows } from "../login/oauth/flow.js";
import { LoginReplica } from "../login/replica/replica.js";
import type { BrokerStage } from "./build-broker.js";
import type { Core } from "./build-core.js";
import type { HttpStage } from "./build-http.js";
import type { StartJob } from "./build-jobs.js";
import type { Topology } from "./build-topology.js";
import type { WorkspaceStage } from "./build-workspace.js";
import { mountLoginRoutes } from "./host-routes.js";
import { sweepLeftovers } from "./leftovers.js";
import { checkBareAdmins } from "./slack-tenants.js";
import { storeCounts } from "./store-factory.js";
import type { Stoppable } from "./stop-stack.js";

// The login builder: the login browsers, the replica that holds or forwards flows, the login
// service and its routes; then the workspace starts (it binds the login service). Its stop ends
// the flows, the replica's server, the browsers, the reaper and the live-view sockets.

/** The login service and the replica the listen builder starts. */
export interface LoginStage extends Stoppable {
  readonly logins: LoginService;
  readonly replica: LoginReplica;
}

/** Login browsers: the given factory, or Chromium; first the leftovers of an earlier run are killed. */
async function loginBrowsers(core: Core): Promise<{ browsers: LoginBrowserFactory; close(): Promise<void> }> {
  const { opts, config, log, clock, registry } = core;
  // Login browsers and inspect vendors an earlier run left behind die before any new one starts.
  const homes = await sweepLeftovers(config.dataDir, log);
  if (opts.browsers) return { browsers: opts.browsers, close: async () => {} };
  const { chromiumPath, childBaseEnv, login } = config;
  const paths = { chromiumPath, homesDir: homes.dir, searchPath: childBaseEnv.PATH };
  return chromiumLogins({ ...paths, log, clock, spareBrowsers: login.spareBrowsers, registry: () => registry });
}

/** Builds the login service over `replica` and `browsers`. */
function loginService(core: Core, w: WorkspaceStage, b: BrokerStage, replica: LoginReplica, browsers: LoginBrowserFactory): LoginService {
  const { opts, config, clock, log, store, keys, registry, metrics } = core;
  const { publicUrl, production, login } = config;
  const notices = w.workspace.adapters?.notices;
  return new LoginService({
    holding: replica,
    store,
    keys,
    registry,
    lifecycle: b.lifecycle,
    clock,
    log,
    browsers,
    ...(notices ? { notifier: notices } : {}),
    oauth: opts.oauth ?? oauthFlows({ publicUrl, clock, secretOf: envSecretSource(), http: { production } }),
    device: deviceGrants({ clock, production }),
    settings: {
      publicUrl,
      linkTtlMs: login.linkTtlMs,
      flowTimeoutMs: login.flowTimeoutMs,
      maxConcurrent: login.maxConcurrent,
      maxConcurrentPerTeam: config.tenantLimits.loginsPerTeam,
      detachGraceMs: login.detachGraceMs,
    },
    refused: (l) => metrics.limitRefused(l),
  });
}

/** The gauges of /metrics over what the builders so far hold. */
function watchGauges(core: Core, topology: Topology, b: BrokerStage, h: HttpStage, logins: LoginService): void {
  const { metrics, store } = core;
  const { broker } = b;
  const flows = () => ({ flows: logins.activeFlows, browsers: logins.activeBrowsers });
  metrics.watch({ pool: () => broker.pool.stats(), approvalsPending: () => broker.approvals.pendingCount, logins: flows });
  metrics.watch({ db: () => storeCounts(store), leadership: () => topology.leadership.status() });
  // Tenants at each per-tenant limit: counts only, never a team id (src/limits).
  metrics.watch({
    tenantsAtLimit: () => ({
      ...broker.deps.callRate?.atLimitCounts(),
      children: broker.pool.teamsAtCap(),
      logins: logins.teamsAtLoginCap,
      mcp_sessions: h.mcp.teamsAtSessionCap,
      event_streams: h.events.perTeam.teamsAtCap(),
    }),
  });
}

/** Builds the login side, mounts its routes and starts the workspace. */
export async function buildLogin(core: Core, topology: Topology, w: WorkspaceStage, b: BrokerStage, h: HttpStage, job: StartJob): Promise<LoginStage> {
  const { config, clock, log, store } = core;
  const browsers = await loginBrowsers(core);
  // Replicas on PostgreSQL forward a login to the one holding it; with SQLite every flow is local.
  const replica = new LoginReplica(topology.loginHolders, clock, log);
  const logins = loginService(core, w, b, replica, browsers.browsers);
  watchGauges(core, topology, b, h, logins);
  await w.workspace.start({ approvals: b.broker.approvals, logins, lifecycle: b.lifecycle });
  // Bare SLAUDE_ADMINS ids name no team: with several tenants they count nowhere, and production says so by not starting.
  if (w.workspace.installations) await checkBareAdmins(config, store, log);
  const reaper = job("login reaper", 30_000, () => logins.reap(), true);
  const liveView = mountLoginRoutes(h.server, logins, config, clock, log, replica);
  const stop = async (): Promise<void> => {
    await logins.shutdown();
    await replica.close();
    await browsers.close();
    await reaper.stop();
    liveView.close();
  };
  return { logins, replica, stop };
}
