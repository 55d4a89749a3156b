import { readFileSync } from "node:fs";
import type { z } from "zod";
import { errorMessage } from "../domain/errors.js";
import { parseDurationMs } from "./duration.js";
import { ConfigError } from "./errors.js";
import { registrySchema, type ServiceEntry, type ToolClassWord } from "./registry-schema.js";

/**
 * Who may run a tool on whose connection. `personal`: the caller's own connection only (never
 * borrowed, never the shared identity). `borrowable`: may run on another member's connection with
 * a grant. `own_or_shared`: the caller's own connection or the service's shared one.
 */
export type ToolAccess = "personal" | "borrowable" | "own_or_shared";

/** A tool's class as the policy reads it. */
export interface ToolClass {
  readonly access: ToolAccess;
  readonly write: boolean;
}

/** A validated service with its TTL in milliseconds and classes resolved. */
export interface Service {
  readonly name: string;
  readonly displayName: string;
  readonly entry: ServiceEntry;
  readonly ttlMs: number;
  /** The class of `tool`; tools the registry does not list get the (fail-closed) default. */
  classOf(tool: string): ToolClass;
  /** Whether the registry classifies `tool` explicitly. */
  isClassified(tool: string): boolean;
}

/** The service registry, read once at start-up. */
export interface ServiceRegistry {
  get(name: string): Service | undefined;
  list(): readonly Service[];
}

/** The class of a tool no one classified: personal, not borrowable, write. */
export const FAIL_CLOSED_CLASS: ToolClass = Object.freeze({ access: "personal", write: true });

/** Turns registry class words into the policy's ToolClass. */
export function toToolClass(words: readonly ToolClassWord[]): ToolClass {
  const access: ToolAccess = words.includes("personal")
    ? "personal"
    : words.includes("borrowable")
      ? "borrowable"
      : "own_or_shared";
  return { access, write: !words.includes("read") };
}

/** Renders zod issues as "file: path.to.field: message" lines. */
export function formatIssues(source: string, error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const where = issue.path.length ? issue.path.map(String).join(".") : "(root)";
      return `${source}: ${where}: ${issue.message}`;
    })
    .join("\n");
}

/** Validates a parsed registry document; throws ConfigError naming `source` and the bad path. */
export function parseRegistry(doc: unknown, source: string): ServiceRegistry {
  const parsed = registrySchema.safeParse(doc);
  if (!parsed.success)
    throw new ConfigError("invalid_registry", `invalid service registry\n${formatIssues(source, parsed.error)}`);
  const services = new Map<string, Service>();
  for (const [name, entry] of Object.entries(parsed.data.services)) {
    const ttlMs = parseDurationMs(entry.ttl);
    if (ttlMs === undefined)
      throw new ConfigError(
        "invalid_registry",
        `invalid service registry\n${source}: services.${name}.ttl: not a positive duration`,
      );
    const fallback = toToolClass(entry.defaultToolClass);
    const classes = new Map(Object.entries(entry.tools).map(([tool, words]) => [tool, toToolClass(words)]));
    services.set(name, {
      name,
      displayName: entry.displayName ?? name,
      entry,
      ttlMs,
      classOf: (tool) => classes.get(tool) ?? fallback,
      isClassified: (tool) => classes.has(tool),
    });
  }
  const all = [...services.values()];
  return { get: (name) => services.get(name), list: () => all };
}

/** Reads and validates the registry file at `path`. */
export function loadRegistry(path: string): ServiceRegistry {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (cause) {
    throw new ConfigError("registry_not_found", `service registry ${path} cannot be read (set SLAUDE_REGISTRY_PATH)`, {
      cause,
    });
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (cause) {
    throw new ConfigError(
      "invalid_registry",
      `invalid service registry\n${path}: (root): not valid JSON: ${errorMessage(cause)}`,
      { cause },
    );
  }
  return parseRegistry(doc, path);
}

/** A registry with no services, for a development start without a registry file. */
export const emptyRegistry: ServiceRegistry = parseRegistry({ services: {} }, "(empty)");
