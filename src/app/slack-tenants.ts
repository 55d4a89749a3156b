import type { Clock } from "../clock/clock.js";
import type { Config } from "../config/env.js";
import { ConfigError } from "../config/errors.js";
import { type AdminCheck, GrantsAdmin } from "../connections/grants-admin.js";
import type { ConnectionLifecycle } from "../connections/lifecycle.js";
import { bareAdminFinding } from "../installations/admin-entries.js";
import type { Installations } from "../installations/installations.js";
import { InstallationTenantDirectory, installationHealth } from "../installations/tenant-directory.js";
import { TenantLifecycle } from "../installations/tenant-lifecycle.js";
import type { PeriodicJob } from "../jobs/periodic-job.js";
import type { Logger } from "../log/logger.js";
import type { HttpServer } from "../server/http-server.js";
import { registerSlackHandlers, type SlackHandlerDeps } from "../slack/handlers.js";
import { createInstallFlow, INSTALL_PATH, REDIRECT_PATH } from "../slack/install-flow.js";
import { singleTokenInstall } from "../slack/installation-adapters.js";
import type { SlackRuntime } from "../slack/slack-app.js";
import { registerTenantHandlers } from "../slack/tenant-handlers.js";
import type { InstallationHealth } from "../store/installation-records.js";
import type { Store } from "../store/store.js";
import type { TenantDirectory } from "../tenancy/tenant-directory.js";

// The composition root's half for Slack's tenants: the settings that must not cross them, the
// uninstall and revocation listeners, the jobs (rotation, install states), the install routes, and
// what readiness and the host guard ask of the installations. app.ts calls these in order.

/** Refuses (production) or warns about bare SLAUDE_ADMINS ids once several installations are served. */
export async function checkBareAdmins(config: Config, store: Store, log: Logger): Promise<void> {
  const f = bareAdminFinding(config.admins, await store.installations.countLive(), config.production);
  if (f?.level === "error")
    throw new ConfigError("invalid_env", `invalid environment\nSLAUDE_ADMINS: ${f.message}\nfix: ${f.fix}`);
  if (f) log.warn(`BARE ADMIN IDS: ${f.message}`, { fix: f.fix });
}

/** What the Slack listeners are built from. */
export interface SlackAppDeps extends Omit<SlackHandlerDeps, "apis" | "tenants" | "tenantName" | "grants"> {
  readonly installations: Installations;
  readonly lifecycle: ConnectionLifecycle;
  /** The workspace's one admin directory (SLAUDE_ADMINS per team, or Slack's admins of that team). */
  readonly admins?: AdminCheck;
  /** Drops what this replica caches of a tenant that was uninstalled or disabled. */
  readonly onTenantEnded: () => void;
}

/** Registers every Slack listener: the tenants' ends (app_uninstalled, tokens_revoked), then cards, commands, Home and messages. */
export function registerSlackApp(slack: SlackRuntime, d: SlackAppDeps): void {
  const { installations, lifecycle, admins, onTenantEnded, ...rest } = d;
  const tenants = new TenantLifecycle({
    repo: d.store.installations,
    installations,
    store: d.store,
    lifecycle,
    clock: d.clock,
    log: d.log,
    onEnded: onTenantEnded,
  });
  registerTenantHandlers(slack.app, { tenants, log: d.log });
  registerSlackHandlers(slack.app, {
    ...rest,
    apis: slack.apis,
    tenants: installations,
    tenantName: async (teamId) => (await installations.forTeam(teamId)).teamName ?? undefined,
    grants: new GrantsAdmin({ store: d.store, lifecycle, clock: d.clock, ...(admins ? { admins } : {}) }),
  });
}

/** The leader-only jobs of the tenants: token rotation, and (with the install flow) the sweep of unfinished install states. */
export function tenantJobs(
  job: (name: string, intervalMs: number, run: () => Promise<unknown>, leaderOnly?: boolean) => PeriodicJob,
  installations: Installations,
  config: Config,
  store: Store,
  clock: Clock,
): PeriodicJob[] {
  // Rotating Slack tokens are refreshed before they expire (each refresh token presented once: the refresh lock).
  const jobs = [job("slack token rotation", 5 * 60_000, () => installations.refreshDue(), true)];
  // Install states left by flows nobody finished (each lives 10 minutes; the store caps how many are live).
  if (config.slack.distribution)
    jobs.push(job("install state sweep", 60_000, () => store.oauthStates.expireDue(clock.now()), true));
  return jobs;
}

/** The check behind /readyz's slack condition: with SLACK_BOT_TOKEN, auth.test and the token recorded as the one installation. */
export function slackAuthCheck(
  slack: SlackRuntime,
  installations: Installations,
  config: Config,
): () => Promise<unknown> {
  const token = config.slack.botToken;
  return async () =>
    token ? installations.ensureConfigured(await singleTokenInstall(token, slack.clientOptions)) : undefined;
}

/** What readiness and the host guard read of the installations. */
export function tenantFacts(
  installations: Installations,
  store: Store,
  clock: Clock,
): { health: () => Promise<InstallationHealth>; directory: TenantDirectory } {
  return {
    health: () => installationHealth(store.installations),
    directory: new InstallationTenantDirectory(store.installations, installations, clock),
  };
}

/** Mounts the install flow of a distributed app on the broker's server, in both Slack modes (Bolt's default paths). */
export function mountInstallFlow(
  http: HttpServer,
  slack: SlackRuntime,
  d: { installations: Installations; config: Config; store: Store; clock: Clock; log: Logger },
): void {
  const distribution = d.config.slack.distribution;
  if (!distribution) return;
  const flow = createInstallFlow({
    distribution,
    publicUrl: d.config.publicUrl,
    clientOptions: slack.clientOptions,
    states: d.store.oauthStates,
    installations: d.installations,
    audit: d.store.audit,
    clock: d.clock,
    log: d.log,
  });
  http.route({ method: "GET", path: INSTALL_PATH, handler: flow.install });
  http.route({ method: "GET", path: REDIRECT_PATH, handler: flow.callback });
}
