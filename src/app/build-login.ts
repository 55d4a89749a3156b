import { envSecretSource } from "../config/env.js";
import { chromiumLogins } from "../login/browser/browser-factory.js";
import { type LoginBrowserFactory, LoginService } from "../login/login-service.js";
import { deviceGrants } from "../login/oauth/device.js";
import { oauthFlows } from "../login/oauth/flow.js";
import { LoginReplica } from "../login/replica/replica.js";
import type { Core } from "./build-core.js";
import { mountLoginRoutes } from "./host-routes.js";
import { sweepLeftovers } from "./leftovers.js";
import type { Parts } from "./parts.js";
import { checkBareAdmins } from "./slack-tenants.js";
import type { Stoppable } from "./stop-stack.js";
import { storeCounts } from "./store-factory.js";

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

type LoginParts = Pick<Parts, "core" | "workspace" | "broker">;

/** Builds the login service over `replica` and `browsers`. */
function loginService(p: LoginParts, replica: LoginReplica, browsers: LoginBrowserFactory): LoginService {
  const { opts, config, clock, log, store, keys, registry, metrics } = p.core;
  const { publicUrl, production, login } = config;
  const notices = p.workspace.workspace.adapters?.notices;
  return new LoginService({
    holding: replica,
    store,
    keys,
    registry,
    lifecycle: p.broker.lifecycle,
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
function watchGauges(p: Pick<Parts, "core" | "topology" | "broker" | "http">, logins: LoginService): void {
  const { metrics, store } = p.core;
  const { broker } = p.broker;
  const h = p.http;
  const flows = () => ({ flows: logins.activeFlows, browsers: logins.activeBrowsers });
  const approvalsPending = () => broker.approvals.pendingCount;
  metrics.watch({ pool: () => broker.pool.stats(), approvalsPending, logins: flows });
  metrics.watch({ db: () => storeCounts(store), leadership: () => p.topology.leadership.status() });
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
export async function buildLogin(p: Omit<Parts, "login">): Promise<LoginStage> {
  const { config, clock, log, store } = p.core;
  const { workspace } = p.workspace;
  const browsers = await loginBrowsers(p.core);
  // Replicas on PostgreSQL forward a login to the one holding it; with SQLite every flow is local.
  const replica = new LoginReplica(p.topology.loginHolders, clock, log);
  const logins = loginService(p, replica, browsers.browsers);
  watchGauges(p, logins);
  await workspace.start({ approvals: p.broker.broker.approvals, logins, lifecycle: p.broker.lifecycle });
  // Bare SLAUDE_ADMINS ids name no team: with several tenants they count nowhere; production refuses to start.
  if (workspace.installations) await checkBareAdmins(config, store, log);
  const reaper = p.job("login reaper", 30_000, () => logins.reap(), true);
  const liveView = mountLoginRoutes(p.http.server, logins, config, clock, log, replica);
  const stop = async (): Promise<void> => {
    await logins.shutdown();
    await replica.close();
    await browsers.close();
    await reaper.stop();
    liveView.close();
  };
  return { logins, replica, stop };
}
