import { type Clock, systemClock } from "../clock/clock.js";
import type { Config } from "../config/env.js";
import { ConfigError } from "../config/errors.js";
import type { ServiceRegistry } from "../config/registry.js";
import { resolveRegistry } from "../config/registry-source.js";
import { rootVerdict } from "../config/root-rule.js";
import { createLogger, type Logger } from "../log/logger.js";
import { PrometheusMetrics } from "../metrics/prometheus.js";
import type { Store } from "../store/store.js";
import type { Topology } from "../topology/topology.js";
import { resolveKeyRing } from "../vault/key-source.js";
import type { KeyRing } from "../vault/keyring.js";
import { Vault } from "../vault/vault.js";
import type { WorkspaceChoice } from "../workspace/choice.js";
import type { AppOptions } from "./running-app.js";
import type { Stoppable } from "./stop-stack.js";
import { openStore } from "./store-factory.js";
import { workspaceChoiceOrThrow } from "./workspace.js";

// The first builder: the checks that refuse a start before anything exists, then the keys, the
// registry, the store (migrated) and the topology that goes with it, the vault and the metrics. Its stop closes the store, last of all.

/** What every later builder is built over. */
export interface Core extends Stoppable {
  readonly opts: AppOptions;
  readonly config: Config;
  readonly clock: Clock;
  readonly log: Logger;
  readonly keys: KeyRing;
  readonly registry: ServiceRegistry;
  readonly store: Store;
  /** The deployment's adapter set, the one that goes with the database opened (store-factory.ts). */
  readonly deployment: Topology;
  readonly vault: Vault;
  readonly metrics: PrometheusMetrics;
  readonly choice: Exclude<WorkspaceChoice, { kind: "refused" }>;
}

/** Refuses what must not start (root without a uid base, production without Slack), warns about the rest. */
function startupChecks(opts: AppOptions, log: Logger): { keys: KeyRing; choice: Core["choice"] } {
  const { config } = opts;
  const keys = resolveKeyRing(config);
  const root = rootVerdict(config, opts.euid ?? process.geteuid?.());
  if (root.level === "error") throw new ConfigError("root_without_uid_base", root.message);
  // Production without Slack stops here, naming the Slack variables, before anything is created.
  const choice = workspaceChoiceOrThrow(config);
  if (root.level === "warn") log.warn(`RUNNING AS ROOT, VENDORS CAN READ THE BROKER'S SECRETS: ${root.message}`);
  if (keys.origin !== "env") {
    const why =
      "DEVELOPMENT ENCRYPTION KEY IN USE: SLAUDE_ENCRYPTION_KEY is not set, credentials are encrypted with a key " +
      "stored next to the database. Set SLAUDE_ENCRYPTION_KEY (and NODE_ENV=production) " +
      "before storing real credentials.";
    log.warn(why, { keyFile: keys.devKeyFile ?? null, generated: keys.origin === "dev-generated" });
  }
  return { keys: keys.ring, choice };
}

/** Checks the start, opens and migrates the store; stop closes it. */
export async function buildCore(opts: AppOptions): Promise<Core> {
  const { config } = opts;
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger(config.logLevel);
  const { keys, choice } = startupChecks(opts, log);
  const source = opts.registry ? { registry: opts.registry, path: undefined } : resolveRegistry(config);
  if ("note" in source && source.note) log.warn(source.note);
  const { store, topology, migrations } = await openStore(config, () => clock.now(), keys);
  if (migrations.applied.length) {
    log.info("database migrated", { applied: migrations.applied.join(","), current: migrations.current });
  }
  const registry = source.registry;
  const core = { opts, config, clock, log, keys, registry, store, deployment: topology, choice };
  return { ...core, vault: new Vault(keys), metrics: new PrometheusMetrics(registry), stop: () => store.close() };
}
