import { existsSync } from "node:fs";
import path from "node:path";
import { demoRegistry } from "./demo-registry.js";
import type { Config } from "./env.js";
import { ConfigError } from "./errors.js";
import { emptyRegistry, loadRegistry, type ServiceRegistry } from "./registry.js";

/** The registry path used when SLAUDE_REGISTRY_PATH is not set. */
export const DEFAULT_REGISTRY_PATH = "services.json";

/** Where the registry came from, for start-up messages and `doctor`. */
export interface RegistrySource {
  readonly registry: ServiceRegistry;
  readonly path: string | undefined;
  readonly note?: string;
}

/**
 * Loads the configured registry. Without SLAUDE_REGISTRY_PATH, `./services.json` is used if it
 * exists; a development start without one runs the demo registry (service `demo`), a test start
 * runs with no services, production refuses.
 */
export function resolveRegistry(config: Config, cwd: string = process.cwd()): RegistrySource {
  if (config.registryPath) return { registry: loadRegistry(config.registryPath), path: config.registryPath };
  const fallback = path.resolve(cwd, DEFAULT_REGISTRY_PATH);
  if (existsSync(fallback)) return { registry: loadRegistry(fallback), path: fallback };
  if (config.production) {
    throw new ConfigError(
      "registry_not_found",
      `no service registry: set SLAUDE_REGISTRY_PATH or create ${fallback} (see services.example.json)`,
    );
  }
  if (config.nodeEnv === "development") {
    return {
      registry: demoRegistry(),
      path: undefined,
      note: `no service registry (${fallback} not found): using the demo registry (service "demo", examples/demo-vendor); copy services.example.json to services.json for real services`,
    };
  }
  return {
    registry: emptyRegistry,
    path: undefined,
    note: `no service registry (${fallback} not found): running with no services; copy services.example.json to services.json`,
  };
}
