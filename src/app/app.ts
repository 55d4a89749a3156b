import { errorMessage } from "../domain/errors.js";
import { systemClock } from "../clock/clock.js";
import { resolveRegistry } from "../config/registry-source.js";
import { ConnectionLifecycle } from "../connections/lifecycle.js";
import { PeriodicJob } from "../jobs/periodic-job.js";
import { Leadership, MemoryLeaderLocks } from "../jobs/leadership.js";
import { PostgresStore } from "../store/postgres/pg-store.js";
import { createLogger } from "../log/logger.js";
import path from "node:path";
import { buildBroker } from "./broker-factory.js";
import { clusterSignalsFor, relayCancellations, startClusterSignals } from "./cluster.js";
import { CachedMembership } from "../membership/membership.js";
import { ChannelMembership } from "../membership/channel-membership.js";
import { buildWorkspace, workspaceChoiceOrThrow } from "./workspace.js";
import { processRefreshLock } from "../login/oauth/refresh-lock.js";
import { checkBareAdmins, mountInstallFlow, registerSlackApp, slackAuthCheck, tenantFacts, tenantJobs } from "./slack-tenants.js";
import { AuditTail } from "../events/audit-tail.js";
import { EventRelay } from "../events/relay.js";
import { envSecretSource } from "../config/env.js";
import { ConfigError } from "../config/errors.js";
import { rootVerdict } from "../config/root-rule.js";
import { deviceGrants } from "../login/oauth/device.js";
import { oauthFlows } from "../login/oauth/flow.js";
import { OAuthClientResolver } from "../login/oauth/client-resolver.js";
import { OAuthRefresher } from "../login/oauth/refresh-manager.js";
import { LoginService } from "../login/login-service.js";
import { chromiumLogins } from "../login/browser/browser-factory.js";
import { singleProcessHolders } from "../login/replica/holders.js";
import { LoginReplica } from "../login/replica/replica.js";
import type { SlackRuntime } from "../slack/slack-app.js";
import { OriginGuard } from "../server/host-auth.js";
import { mountHostRoutes, mountLoginRoutes } from "./host-routes.js";
import { mountProbes } from "./probes.js";
import { HttpServer } from "../server/http-server.js";
import { SlackAuthState } from "../server/readiness.js";
import { PrometheusMetrics } from "../metrics/prometheus.js";
import { turnStoreFor } from "./turn-store-factory.js";
import { openStore, storeCounts } from "./store-factory.js";
import type { Store } from "../store/store.js";
import { resolveKeyRing } from "../vault/key-source.js";
import { sweepLeftovers } from "./leftovers.js";
import { Vault } from "../vault/vault.js";
import { VERSION } from "../domain/version.js";
import { resolveHostTokens } from "../config/dev-host-token.js";
import { startupBanner } from "./banner.js";
import { startConsole } from "./console.js";
import type { AppOptions, RunningApp } from "./running-app.js";

export type { AppOptions, RunningApp } from "./running-app.js";

/** The composition root: builds the real adapters from config and starts serving. */
export async function startApp(opts: AppOptions): Promise<RunningApp> {
  const { config } = opts;
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger(config.logLevel);

  const keys = resolveKeyRing(config);
  const root = rootVerdict(config, opts.euid ?? process.geteuid?.());
  if (root.level === "error") throw new ConfigError("root_without_uid_base", root.message);
  // Production without Slack stops here, naming the Slack variables, before anything is created.
  const workspaceChoice = workspaceChoiceOrThrow(config);
  if (root.level === "warn") log.warn(`RUNNING AS ROOT, VENDORS CAN READ THE BROKER'S SECRETS: ${root.message}`);
  if (keys.origin !== "env") {
    log.warn("DEVELOPMENT ENCRYPTION KEY IN USE: SLAUDE_ENCRYPTION_KEY is not set, credentials are encrypted with a key stored next to the database. Set SLAUDE_ENCRYPTION_KEY (and NODE_ENV=production) before storing real credentials.", {
      keyFile: keys.devKeyFile ?? null,
      generated: keys.origin === "dev-generated",
    });
  }
  const registrySource = opts.registry ? { registry: opts.registry, path: undefined } : resolveRegistry(config);
  if ("note" in registrySource && registrySource.note) log.warn(registrySource.note);

  const { store, migrations } = await openStore(config, () => clock.now(), keys.ring);
  if (migrations.applied.length) log.info("database migrated", { applied: migrations.applied.join(","), current: migrations.current });
  const vault = new Vault(keys.ring);
  const metrics = new PrometheusMetrics(registrySource.registry);
  // Signals between replicas (PostgreSQL NOTIFY; in-process on SQLite): decisions, ends, membership.
  const signals = clusterSignalsFor(store, { log, clock, keys: () => keys.ring });
  const lifecycle = new ConnectionLifecycle({ store, vault, registry: registrySource.registry, clock, log, signals });
  // Replicas on one PostgreSQL share its locks (job leadership, OAuth refresh); with SQLite this process is alone.
  const sharedDb = store instanceof PostgresStore ? store : undefined;
  const leadership = new Leadership({ locks: sharedDb?.locks ?? new MemoryLeaderLocks(), log });

  // The workspace (Slack, or the local one in development) is the membership source, the approval
  // channel, the consent port and the owner notices.
  const workspace = buildWorkspace(workspaceChoice, { config, store, vault, refreshLock: sharedDb?.locks ?? processRefreshLock, registry: registrySource.registry, clock, log, onInstallationRefresh: (o) => metrics.slackTokenRefreshed(o) });
  const slack: SlackRuntime | undefined = workspace.slack;
  const membership = opts.membership ?? workspace.adapters?.membership;
  const approvalChannel = opts.approvalChannel ?? workspace.adapters?.approvals;
  const membershipCache = membership instanceof CachedMembership || membership instanceof ChannelMembership ? membership : undefined;
  const secretOf = envSecretSource();
  // One refresh skew, here: the refresher refreshes within it, the broker asks it to within it.
  const refreshSkewMs = 60_000;
  const refresher = new OAuthRefresher({
    skewMs: refreshSkewMs,
    store,
    vault,
    registry: registrySource.registry,
    clock,
    log,
    // NODE_ENV=production: no OAuth request travels over plain http, loopback included.
    http: { production: config.production },
    clients: new OAuthClientResolver({ secretOf, http: { clock, production: config.production } }),
    notifier: workspace.adapters?.notices ?? { needsLogin: async () => {} },
    ...(sharedDb ? { lock: sharedDb.locks } : {}),
  });
  const broker = buildBroker({
    refresher: { skewMs: refreshSkewMs, fresh: (c) => refresher.fresh(c) },
    store,
    vault,
    registry: registrySource.registry,
    lifecycle,
    clock,
    log,
    ...(membership ? { membership } : {}),
    ...(approvalChannel ? { approvalChannel } : {}),
    ...(workspace.adapters ? { consent: workspace.adapters.consent } : {}),
    runDir: path.join(config.dataDir, "run"),
    childBaseEnv: config.childBaseEnv,
    pool: { maxChildren: config.pool.maxChildren, idleMs: config.pool.idleMs, acquireTimeoutMs: config.pool.acquireTimeoutMs, childUidBase: config.pool.childUidBase },
    limits: config.resultLimits,
    resultStore: config.resultStore,
    callTimeoutMs: config.pool.callTimeoutMs,
    approvalTimeoutMs: config.approvalTimeoutMs,
    metrics,
    turns: turnStoreFor(store, config.turns),
    credentialCache: config.caches.credentials,
    signals,
    tenantLimits: { callRate: config.tenantLimits.callRate, childrenPerTeam: config.tenantLimits.childrenPerTeam },
    ...(sharedDb ? { rateBuckets: sharedDb.rateBuckets } : {}),
  });
  await broker.start({ expireAbandoned: !sharedDb, ...(opts.idleReapIntervalMs !== undefined ? { idleReapIntervalMs: opts.idleReapIntervalMs } : {}) });
  const cluster = await startClusterSignals(signals, { approvals: broker.approvals, broker, ...(membershipCache ? { membership: membershipCache } : {}) });
  // Login browsers and inspect vendors an earlier run left behind die before any new one starts.
  const browserHomes = await sweepLeftovers(config.dataDir, log);
  const loginBrowsers = opts.browsers ? { browsers: opts.browsers, close: async () => {} } : chromiumLogins({ chromiumPath: config.chromiumPath, log, homesDir: browserHomes.dir, searchPath: config.childBaseEnv.PATH, clock, spareBrowsers: config.login.spareBrowsers, registry: () => registrySource.registry });
  // Replicas on PostgreSQL forward a login to the one holding it; with SQLite every flow is local.
  const loginReplica = new LoginReplica(sharedDb?.loginHolders ?? singleProcessHolders, clock, log);
  const logins = new LoginService({
    holding: loginReplica,
    store,
    keys: keys.ring,
    registry: registrySource.registry,
    lifecycle,
    clock,
    log,
    browsers: loginBrowsers.browsers,
    ...(workspace.adapters ? { notifier: workspace.adapters.notices } : {}),
    oauth: opts.oauth ?? oauthFlows({ publicUrl: config.publicUrl, clock, secretOf, http: { production: config.production } }),
    device: deviceGrants({ clock, production: config.production }),
    settings: { publicUrl: config.publicUrl, linkTtlMs: config.login.linkTtlMs, flowTimeoutMs: config.login.flowTimeoutMs, maxConcurrent: config.login.maxConcurrent, maxConcurrentPerTeam: config.tenantLimits.loginsPerTeam, detachGraceMs: config.login.detachGraceMs },
    refused: (l) => metrics.limitRefused(l),
  });
  metrics.watch({ pool: () => broker.pool.stats(), approvalsPending: () => broker.approvals.pendingCount, logins: () => ({ flows: logins.activeFlows, browsers: logins.activeBrowsers }) });
  metrics.watch({ db: () => storeCounts(store), leadership: () => leadership.status() });
  await workspace.start({ approvals: broker.approvals, logins, lifecycle });
  // Bare SLAUDE_ADMINS ids name no team: with several tenants they count nowhere, and production says so by not starting.
  if (workspace.installations) await checkBareAdmins(config, store, log);
  // Every periodic job runs on the app's clock, never overlapping itself; started here, stopped by close().
  // A `leaderOnly` job sweeps the shared database: one replica at a time runs it (src/jobs/leadership.ts).
  const job = (name: string, intervalMs: number, run: () => Promise<unknown>, leaderOnly = false): PeriodicJob => {
    const j = new PeriodicJob({ name, intervalMs, run, log, clock, metrics, ...(leaderOnly ? { leadership } : {}) });
    j.start();
    return j;
  };
  const loginReaper = job("login reaper", 30_000, () => logins.reap(), true);
  if (!membership) log.warn("no channel membership source (Slack not configured): every tool call is refused as not_member until Slack is set up");
  const installations = workspace.installations;
  if (slack && installations) {
    registerSlackApp(slack, {
      installations,
      store,
      lifecycle,
      registry: registrySource.registry,
      approvals: broker.approvals,
      turns: broker.turns,
      pins: broker.deps.pins,
      logins,
      ...(workspace.adapters ? { admins: workspace.adapters.admins } : {}),
      ...(cluster.membership ? { membership: cluster.membership } : {}),
      onTenantEnded: () => membershipCache?.clear(),
      clock,
      log,
    });
  }

  // `slaude-connect approvals decide` writes the store from another process: waiting calls pick it up here.
  const approvalPoll = job("approval decisions", opts.approvalPollIntervalMs ?? 1_000, () => broker.approvals.collectDecisions());
  // Lifecycle events of committed audit rows, whoever wrote them (this replica, another, the CLI).
  const auditTail = new AuditTail(store.audit, broker.events, clock);
  await auditTail.start();
  const eventTail = job("event tail", opts.eventTailIntervalMs ?? 1_000, () => auditTail.poll());
  // Replicas hand each other the events that exist only where they happen (calls, vendor children).
  const eventRelay = sharedDb ? new EventRelay(broker.events, sharedDb.db, keys.ring.subkey("event-relay"), { log, clock }) : undefined;
  await eventRelay?.start();
  const reaper = job("ttl reaper", opts.reapIntervalMs ?? 30_000, () => lifecycle.reapExpired(), true);
  // Stored results past their TTL are deleted (secure_delete overwrites them on disk).
  const resultReaper = job("result reaper", opts.reapIntervalMs ?? 30_000, () => broker.deps.results.reap(), true);
  // Threads idle past the turn max age leave the shared turn table (PostgreSQL; memory's LRU bounds itself).
  const turnReaper = job("turn reaper", opts.reapIntervalMs ?? 30_000, () => broker.turns.reap(clock.now()), true);
  // Pending approvals past their expiry whose caller is gone (a replica killed while a call waited).
  const approvalExpiry = job("approval expiry", opts.reapIntervalMs ?? 30_000, () => broker.approvals.expireDue(), true);
  const tenantPasses = installations ? tenantJobs(job, installations, config, store, clock) : [];
  // Expired membership answers leave memory even for channels nobody asks about again.
  const cacheSweep = job("cache sweep", 60_000, async () => membershipCache?.sweep());

  const http = new HttpServer(log);

  // Development without SLAUDE_HOST_TOKENS: a generated token in the data dir; otherwise exactly the configured ones.
  const hostTokens = resolveHostTokens(config);
  if (hostTokens.file) log.info(hostTokens.origin === "dev-generated" ? "development host token generated" : "development host token in use", { file: hostTokens.file });
  const origin = new OriginGuard({ publicUrl: config.publicUrl, port: config.port, allowedHosts: config.allowedHosts, allowedOrigins: config.allowedOrigins });
  // With SLACK_BOT_TOKEN: auth.test, and the token recorded as the one installation (again if Slack was down at start).
  const slackAuth = slack && installations ? new SlackAuthState(slackAuthCheck(slack, installations, config), log) : undefined;
  const facts = installations ? tenantFacts(installations, store, clock) : undefined;
  const slackAuthJob = slackAuth ? new PeriodicJob({ name: "slack auth check", intervalMs: opts.slackAuthCheckIntervalMs ?? 60_000, run: () => slackAuth.check(), log, clock, metrics }) : undefined;
  mountProbes(http, { store, services: () => registrySource.registry.list().length, slack: slackAuth, ...(facts ? { installations: facts.health } : {}), metrics, metricsToken: config.metricsToken, origin });
  // Slack's tenants are its installations: a host request for a team none serves is refused, whatever the token.
  const tenantDirectory = opts.tenants ?? facts?.directory;
  const { mcp, events } = await mountHostRoutes({ http, broker, tokens: hostTokens.tokens, keys: keys.ring, ...(tenantDirectory ? { tenants: tenantDirectory } : {}), origin, config, clock, log, store });
  relayCancellations(signals, mcp);
  // Tenants at each per-tenant limit: counts only, never a team id (src/limits).
  metrics.watch({ tenantsAtLimit: () => ({ ...broker.deps.callRate?.atLimitCounts(), children: broker.pool.teamsAtCap(), logins: logins.teamsAtLoginCap, mcp_sessions: mcp.teamsAtSessionCap, event_streams: events.perTeam.teamsAtCap() }) });
  if (slack?.httpHandler) http.route({ method: "POST", path: "/slack/events", handler: slack.httpHandler });
  if (slack && installations) mountInstallFlow(http, slack, { installations, config, store, clock, log });
  const liveView = mountLoginRoutes(http, logins, config, clock, log, loginReplica);

  const port = await http.listen(config.port, config.bindHost);
  const consoleRun = workspace.local && workspace.adapters ? await startConsole({ http, port, config, workspace: workspace.local, admins: workspace.adapters.admins, store, lifecycle, pins: broker.deps.pins, hostToken: () => hostTokens.tokens[0], clock, log }) : undefined;
  origin.allowPort(port);
  slackAuthJob?.start();
  if (slack) {
    await slack.start();
    log.info("slack app ready", { mode: slack.mode });
  }
  log.info("slaude-connect listening", { host: config.bindHost, port, version: VERSION, services: registrySource.registry.list().length });
  const url = `http://${config.bindHost.includes(":") ? `[${config.bindHost}]` : config.bindHost}:${port}`;
  // A wildcard bind is not an address to connect to; loopback is, and passes the Host check.
  const reachable = config.bindHost === "0.0.0.0" || config.bindHost === "::" ? `http://127.0.0.1:${port}` : url;
  if (sharedDb && !config.replicaUrl && /^(127\.|localhost$|\[::1\]$)/.test(new URL(reachable).hostname)) log.warn("SLAUDE_REPLICA_URL is not set: other replicas forward logins held here to this address, reachable only from this machine", { replicaUrl: reachable });
  await loginReplica.start(config.replicaUrl ?? new URL(reachable).origin);
  // The local workspace has real threads: the block's commands give a member the turn in one and call a tool.
  const example = await workspace.local?.exampleThread().catch((err: unknown) => void log.warn("no example thread for the start-up block", { error: errorMessage(err) }));
  const service = registrySource.registry.get("demo")?.name ?? registrySource.registry.list()[0]?.name;
  const banner = startupBanner({
    mcpUrl: `${reachable}/mcp`, ...(consoleRun ? { consoleUrl: consoleRun.url } : {}),
    hostToken: hostTokens.file ? { file: hostTokens.file } : hostTokens.tokens.length ? { env: "SLAUDE_HOST_TOKENS" } : undefined,
    exampleThread: "<team_id>/<channel_id>/<thread_ts>",
    ...(example ? { tryCall: { ...example.thread, channelName: example.channel.name, userId: example.user.id, userName: example.user.name, ...(service ? { service } : {}) } } : {}),
  });

  let closing: Promise<void> | undefined;
  return {
    port,
    url,
    store,
    lifecycle,
    broker,
    logins,
    metrics,
    mcp,
    workspace: { kind: workspace.kind, ...(workspace.local ? { local: workspace.local } : {}) },
    events,
    hostToken: hostTokens.tokens[0],
    hostTokenFile: hostTokens.file,
    banner,
    close: () =>
      (closing ??= (async () => {
        // Waiting approvals are settled (cards marked expired) while Slack and the store are still up.
        await approvalPoll.stop();
        await eventTail.stop();
        await eventRelay?.close();
        await signals.close();
        await broker.approvals.shutdown();
        await consoleRun?.close();
        await logins.shutdown();
        await loginReplica.close();
        await loginBrowsers.close();
        await loginReaper.stop();
        liveView.close();
        await mcp.close();
        events.close();
        await slack?.stop();
        await http.close();
        await reaper.stop();
        await resultReaper.stop();
        await turnReaper.stop();
        await approvalExpiry.stop();
        await slackAuthJob?.stop();
        for (const j of tenantPasses) await j.stop();
        await cacheSweep.stop();
        await broker.shutdown();
        await leadership.close();
        await store.close();
        log.info("slaude-connect stopped");
      })()),
  };
}
