import type { Config } from "./env.js";

/** The verdict on the process user: fine, worth a loud warning, or a reason not to start. */
export interface RootVerdict {
  readonly level: "ok" | "warn" | "error";
  readonly message: string;
}

/**
 * Whether the broker may run as `euid`. As root without SLAUDE_CHILD_UID_BASE every vendor child
 * runs as root too and can read /proc/<broker>/environ (master key, Slack and host tokens) and
 * the other children's environments: refused in production, a loud warning otherwise.
 */
export function rootVerdict(config: Pick<Config, "production" | "pool">, euid: number | undefined): RootVerdict {
  if (euid !== 0) return { level: "ok", message: `running as uid ${euid ?? "unknown"} (not root)` };
  const base = config.pool.childUidBase;
  if (base !== undefined)
    return {
      level: "ok",
      message: `running as root; vendor children run under their own uids from ${base} (SLAUDE_CHILD_UID_BASE)`,
    };
  const message =
    "running as root without SLAUDE_CHILD_UID_BASE: every vendor child would run as root and could read the broker's environment through /proc (the master key, Slack and host tokens) and other children's; set SLAUDE_CHILD_UID_BASE (e.g. 100000), or run as an unprivileged user, and prefer the *_FILE variants for secrets";
  return { level: config.production ? "error" : "warn", message };
}
