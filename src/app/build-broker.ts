import path from "node:path";
import type { Broker } from "../broker/broker.js";
import { type Config, envSecretSource } from "../config/env.js";
import { ConnectionLifecycle } from "../connections/lifecycle.js";
import { OAuthClientResolver } from "../login/oauth/client-resolver.js";
import { OAuthRefresher } from "../login/oauth/refresh-manager.js";
import { PinService } from "../pinning/service.js";
import type { ResultStore } from "../results/result-store.js";
import { type BrokerOptions, buildBroker, buildResultStore } from "./broker-factory.js";
import type { Core } from "./build-core.js";
import type { TopologyParts } from "./build-topology.js";
import type { WorkspaceStage } from "./build-workspace.js";
import type { Parts } from "./parts.js";
import type { Stoppable } from "./stop-stack.js";

// The broker builder: the connections' lifecycle, the OAuth refresher, the pin service and the
// result store (built once, here, and handed to the broker and to whoever else needs them), and the
// broker over them, started. Its stop ends the broker's reapers and every vendor child.

/** The broker and the services built beside it. */
export interface BrokerStage extends Stoppable {
  readonly lifecycle: ConnectionLifecycle;
  readonly broker: Broker;
  /** Tool definition pins: the call path, the Slack review buttons and the console decide through it. */
  readonly pins: PinService;
  /** Stored results of truncated calls: the broker serves them, the result reaper deletes them. */
  readonly results: ResultStore;
}

/** One refresh skew, here: the refresher refreshes within it, the broker asks it to within it. */
const REFRESH_SKEW_MS = 60_000;

/** The broker's settings from config (SLAUDE_POOL_*, result limits, timeouts, tenant limits). */
function brokerSettings(config: Config): Omit<BrokerOptions, keyof Core | "lifecycle"> {
  const { pool, tenantLimits } = config;
  return {
    runDir: path.join(config.dataDir, "run"),
    childBaseEnv: config.childBaseEnv,
    pool: {
      maxChildren: pool.maxChildren,
      idleMs: pool.idleMs,
      acquireTimeoutMs: pool.acquireTimeoutMs,
      childUidBase: pool.childUidBase,
    },
    limits: config.resultLimits,
    resultStore: config.resultStore,
    callTimeoutMs: pool.callTimeoutMs,
    approvalTimeoutMs: config.approvalTimeoutMs,
    credentialCache: config.caches.credentials,
    tenantLimits: { callRate: tenantLimits.callRate, childrenPerTeam: tenantLimits.childrenPerTeam },
  };
}

/** The OAuth refresher: refreshes credentials near expiry, one refresh per connection (across replicas). */
function buildRefresher(core: Core, topology: TopologyParts, w: WorkspaceStage): OAuthRefresher {
  const { config, store, vault, registry, clock, log } = core;
  const http = { production: config.production };
  return new OAuthRefresher({
    skewMs: REFRESH_SKEW_MS,
    store,
    vault,
    registry,
    clock,
    log,
    // NODE_ENV=production: no OAuth request travels over plain http, loopback included.
    http,
    clients: new OAuthClientResolver({ secretOf: envSecretSource(), http: { clock, ...http } }),
    notifier: w.workspace.adapters?.notices ?? { needsLogin: async () => {} },
    ...(topology.oauthLock ? { lock: topology.oauthLock } : {}),
  });
}

/** Builds and starts the broker. */
export async function buildBrokerStage(p: Pick<Parts, "core" | "topology" | "workspace">): Promise<BrokerStage> {
  const { core, topology, workspace: w } = p;
  const { opts, config, store, vault, registry, clock, log, metrics } = core;
  const { signals, turns, rateBuckets } = topology;
  const lifecycle = new ConnectionLifecycle({ store, vault, registry, clock, log, signals });
  const refresher = buildRefresher(core, topology, w);
  const settings = brokerSettings(config);
  const pins = new PinService({ store, clock, log });
  const results = buildResultStore({ store, vault, clock, log, ...settings });
  const consent = w.workspace.adapters?.consent;
  const broker = buildBroker({
    ...settings,
    ...{ store, vault, registry, lifecycle, clock, log, metrics, turns, signals, pins, results },
    refresher: { skewMs: REFRESH_SKEW_MS, fresh: (c) => refresher.fresh(c) },
    ...(w.membership ? { membership: w.membership } : {}),
    ...(w.approvalChannel ? { approvalChannel: w.approvalChannel } : {}),
    ...(consent ? { consent } : {}),
    ...(rateBuckets ? { rateBuckets } : {}),
  });
  const idle = opts.idleReapIntervalMs;
  const reap = idle !== undefined ? { idleReapIntervalMs: idle } : {};
  await broker.start({ expireAbandoned: topology.expireAbandoned, ...reap });
  return { lifecycle, broker, pins, results, stop: () => broker.shutdown() };
}
