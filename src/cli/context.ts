import type { Readable, Writable } from "node:stream";
import { clusterSignalsFor } from "../app/cluster.js";
import type { DeploymentConnector } from "../app/store-connect.js";
import type { Deployment } from "../app/store-factory.js";
import { type Clock, systemClock } from "../clock/clock.js";
import type { ClusterSignals } from "../cluster/signals.js";
import { type Config, loadConfig } from "../config/env.js";
import { type RegistrySource, resolveRegistry } from "../config/registry-source.js";
import { GrantsAdmin } from "../connections/grants-admin.js";
import { ConnectionLifecycle } from "../connections/lifecycle.js";
import { createLogger, type Logger } from "../log/logger.js";
import type { Store } from "../store/store.js";
import { type KeySource, resolveKeyRing } from "../vault/key-source.js";
import { Vault } from "../vault/vault.js";

/** The CLI's standard streams and environment, injected so tests can drive it in-process. */
export interface CliIo {
  readonly stdin: Readable & { isTTY?: boolean };
  readonly stdout: Writable;
  readonly stderr: Writable;
  readonly env: NodeJS.ProcessEnv;
  readonly clock?: Clock;
}

/** The connector of a context that was given none: a command that takes no store. */
const noStore: DeploymentConnector = () => {
  throw new Error("this command opens no store through the CLI context");
};

/** Lazily built dependencies of a CLI command; each is created on first use and closed at the end. */
export class CliContext {
  private cfg: Config | undefined;
  private deploymentInst: Deployment | undefined;
  private registrySrc: RegistrySource | undefined;
  private vaultInst: Vault | undefined;
  private keySrc: KeySource | undefined;
  private signalsInst: ClusterSignals | undefined;
  readonly log: Logger;
  readonly clock: Clock;

  /**
   * `connect` opens the store on first use (app/store-connect.ts); runCli loads it only for commands
   * that may take a store, so `serve`, which opens its own, never loads PostgreSQL's client.
   */
  constructor(
    readonly io: CliIo,
    private readonly connect: DeploymentConnector = noStore,
  ) {
    this.clock = io.clock ?? systemClock;
    this.log = createLogger("warn", (l) => io.stderr.write(l));
  }

  get config(): Config {
    this.cfg ??= loadConfig(this.io.env);
    return this.cfg;
  }

  /** The configured store (SQLite file, or PostgreSQL when SLAUDE_DATABASE_URL is set). */
  get store(): Store {
    return this.deployment.store;
  }

  /** The store and its topology, opened once on first use. */
  private get deployment(): Deployment {
    this.deploymentInst ??= this.connect(
      this.config,
      () => this.clock.now(),
      () => this.keys.ring,
    );
    return this.deploymentInst;
  }

  get registry(): RegistrySource {
    this.registrySrc ??= resolveRegistry(this.config);
    return this.registrySrc;
  }

  /** The key ring and where its primary key came from (the environment or a development key file). */
  get keys(): KeySource {
    this.keySrc ??= resolveKeyRing(this.config);
    return this.keySrc;
  }

  get vault(): Vault {
    this.vaultInst ??= new Vault(this.keys.ring);
    return this.vaultInst;
  }

  /** Announces what the CLI committed to running replicas (PostgreSQL NOTIFY); publish-only, it never listens. */
  get signals(): ClusterSignals {
    const deps = { log: this.log, clock: this.clock, keys: () => this.keys.ring };
    this.signalsInst ??= clusterSignalsFor(this.deployment.topology, deps);
    return this.signalsInst;
  }

  lifecycle(): ConnectionLifecycle {
    return new ConnectionLifecycle({
      store: this.store,
      vault: this.vault,
      registry: this.registry.registry,
      clock: this.clock,
      log: this.log,
      signals: this.signals,
    });
  }

  /** Grant and admin revokes with their audit rows; the operator running the CLI is trusted, no admin check. */
  grants(): GrantsAdmin {
    return new GrantsAdmin({ store: this.store, lifecycle: this.lifecycle(), clock: this.clock });
  }

  out(line = ""): void {
    this.io.stdout.write(`${line}\n`);
  }

  err(line: string): void {
    this.io.stderr.write(`${line}\n`);
  }

  async close(): Promise<void> {
    await this.signalsInst?.close();
    await this.deploymentInst?.store.close();
  }
}

/** A usage mistake: printed with the command's help, exit code 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
