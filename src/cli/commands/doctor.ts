import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { devHostTokenPath } from "../../config/dev-host-token.js";
import { type Config, loadConfig } from "../../config/env.js";
import { resolveRegistry } from "../../config/registry-source.js";
import { rootVerdict } from "../../config/root-rule.js";
import { errorMessage } from "../../domain/errors.js";
import { singleInstallation } from "../../tenancy/tenant-directory.js";
import { chooseWorkspace } from "../../workspace/choice.js";
import type { CliContext } from "../context.js";
import { checkPostgres } from "./doctor-postgres.js";
import { checkKeyIds, checkSlackScopes, checkVendorCommands } from "./doctor-runtime.js";
import { checkDatabase, checkKey } from "./doctor-storage.js";
import {
  checkHostTokenTenancy,
  type InstallationCounts,
  installationDirectory,
  installationFindings,
  readInstallations,
} from "./doctor-tenancy.js";

/** One finding of `doctor`: what was checked, how it went and, if not ok, how to fix it. */
export interface Finding {
  readonly check: string;
  readonly level: "ok" | "warn" | "error";
  readonly message: string;
  readonly fix?: string;
}

/** The catalog shipped in this package (src/cli/commands and dist/cli/commands alike are three levels below its root). */
export const SERVICES_EXAMPLE = fileURLToPath(new URL("../../../services.example.json", import.meta.url));

/** Quotes one word for a POSIX shell, so a fix with a path in it pastes as one command. */
function shellWord(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'"'"'`)}'`;
}

function checkRegistry(config: Config, cwd: string): Finding {
  try {
    const src = resolveRegistry(config, cwd);
    // The catalog is in the package, not where serve runs: the fix names both paths.
    const fix = `cp ${shellWord(SERVICES_EXAMPLE)} ${shellWord(path.resolve(cwd, "services.json"))} (then keep the services you use), or set SLAUDE_REGISTRY_PATH`;
    if (!src.path) return { check: "service registry", level: "warn", message: src.note ?? "no registry", fix };
    return {
      check: "service registry",
      level: "ok",
      message: `${src.path}: ${src.registry.list().length} service(s): ${src.registry
        .list()
        .map((s) => s.name)
        .join(", ")}`,
    };
  } catch (e) {
    return { check: "service registry", level: "error", message: errorMessage(e) };
  }
}

function checkChromium(config: Config): Finding {
  const fix =
    "install Debian's Chromium (`apt-get install -y chromium`) or set SLAUDE_CHROMIUM_PATH; needed for browser logins only";
  try {
    accessSync(config.chromiumPath, constants.X_OK);
  } catch {
    return { check: "chromium", level: "warn", message: `${config.chromiumPath} not found or not executable`, fix };
  }
  const r = spawnSync(config.chromiumPath, ["--version"], { encoding: "utf8", timeout: 10_000 });
  if (r.status !== 0)
    return { check: "chromium", level: "warn", message: `${config.chromiumPath} --version failed`, fix };
  return { check: "chromium", level: "ok", message: r.stdout.trim() };
}

function checkSlack(config: Config): Finding {
  const s = config.slack;
  if (s.configured)
    return { check: "slack", level: "ok", message: `${s.mode} mode${s.apiUrl ? `, API at ${s.apiUrl}` : ""}` };
  const missing = [
    !s.botToken && "SLACK_BOT_TOKEN",
    s.mode === "http" && !s.signingSecret && "SLACK_SIGNING_SECRET",
    s.mode === "socket" && !s.appToken && "SLACK_APP_TOKEN",
  ].filter(Boolean);
  const local = chooseWorkspace(config).kind === "local";
  return {
    check: "slack",
    level: "warn",
    message: local
      ? `Slack is not configured (missing ${missing.join(", ")}): the local workspace serves people instead (development only, see docs/local-workspace.md)`
      : `Slack is not configured (missing ${missing.join(", ")}): channel membership cannot be verified, so every tool call is refused (not_member), and no approval or consent card can be sent`,
    fix: "see docs/slack-setup.md",
  };
}

/** Which workspace `serve` would run, as the start-up log says it; an error when it would refuse to start. */
export function checkWorkspace(config: Config): Finding {
  const choice = chooseWorkspace(config);
  switch (choice.kind) {
    case "refused":
      return {
        check: "workspace",
        level: "error",
        message: choice.message,
        fix: "see docs/slack-setup.md (production) or docs/local-workspace.md (development)",
      };
    case "slack":
      return { check: "workspace", level: "ok", message: `slack (${choice.why})` };
    case "local":
      return {
        check: "workspace",
        level: "ok",
        message: `local (${choice.why}): users, channels and inboxes in the database; the demo team is seeded on first start`,
      };
    case "none":
      return {
        check: "workspace",
        level: "warn",
        message: `none (${choice.why}): nobody is a channel member, so every tool call is refused (not_member)`,
        fix: "configure Slack (docs/slack-setup.md), or unset SLAUDE_WORKSPACE in development for the local workspace",
      };
  }
}

function checkHostTokens(config: Config): Finding {
  if (config.hostTokens.length === 0 && config.nodeEnv === "development") {
    // Only named here: doctor never creates the file, `serve` does on its first start.
    return {
      check: "host tokens",
      level: "ok",
      message: `development: serve accepts the token in ${devHostTokenPath(config.dataDir)} (generated on first start)`,
    };
  }
  if (config.hostTokens.length === 0) {
    return {
      check: "host tokens",
      level: "warn",
      message: "SLAUDE_HOST_TOKENS is empty: no agent host can use the MCP endpoint",
      fix: "set SLAUDE_HOST_TOKENS to a long random value shared with the host",
    };
  }
  const weak = config.hostTokens.filter((t) => t.length < 32).length;
  if (weak)
    return {
      check: "host tokens",
      level: "warn",
      message: `${weak} host token(s) shorter than 32 characters`,
      fix: "use `openssl rand -base64 32`",
    };
  return { check: "host tokens", level: "ok", message: `${config.hostTokens.length} host token(s)` };
}

function checkProcessUser(config: Config, euid: number | undefined): Finding {
  const v = rootVerdict(config, euid);
  return {
    check: "process user",
    level: v.level,
    message: v.message,
    ...(v.level === "ok"
      ? {}
      : { fix: "set SLAUDE_CHILD_UID_BASE (see docs/operations.md) or run as an unprivileged user" }),
  };
}

/** Runs every check; never throws for a bad setup, it reports it. `euid` is the uid the broker would run as. */
export function runChecks(
  env: NodeJS.ProcessEnv,
  euid: number | undefined = process.geteuid?.(),
  cwd: string = process.cwd(),
): Finding[] {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (e) {
    return [{ check: "environment", level: "error", message: errorMessage(e), fix: "see .env.example" }];
  }
  const keys = checkKey(config);
  const registry = checkRegistry(config, cwd);
  return [
    { check: "environment", level: "ok", message: `NODE_ENV=${config.nodeEnv}, data dir ${config.dataDir}` },
    ...keys,
    // On PostgreSQL the database and its credentials are checked over the network (runRemoteChecks).
    ...(config.databaseUrl ? [] : [checkDatabase(config)]),
    // Only with usable keys and registry: otherwise their own findings already say what is wrong.
    ...(keys.some((f) => f.level === "error") || config.databaseUrl ? [] : [checkKeyIds(config)]),
    registry,
    ...(registry.level === "error" ? [] : [checkVendorCommands(config, resolveRegistry(config, cwd).registry)]),
    checkChromium(config),
    checkSlack(config),
    checkWorkspace(config),
    checkHostTokens(config),
    checkProcessUser(config, euid),
  ];
}

/** Checks that ask a network service (PostgreSQL, Slack's auth.test); none when the environment is invalid. */
export async function runRemoteChecks(env: NodeJS.ProcessEnv): Promise<Finding[]> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch {
    return [];
  }
  const store = config.databaseUrl ? await checkPostgres(config, config.databaseUrl) : [];
  const slack = await checkSlackScopes(config);
  // The local workspace and a deployment without Slack serve one tenant; Slack's are its installations.
  let counts: InstallationCounts | undefined;
  try {
    counts = config.slack.configured ? await readInstallations(config) : undefined;
  } catch (err) {
    return [
      ...store,
      ...(slack ? [slack] : []),
      {
        check: "slack installations",
        level: "error",
        message: `the installations could not be read: ${err instanceof Error ? err.message : String(err)}`,
        fix: "check the database (see the findings above)",
      },
    ];
  }
  const tenancy = await checkHostTokenTenancy(config, counts ? installationDirectory(counts) : singleInstallation());
  return [...store, ...(slack ? [slack] : []), ...(counts ? installationFindings(config, counts) : []), tenancy];
}

/** `doctor`: prints each check; exit 1 if any is an error, 0 with warnings. */
export async function doctorCommand(ctx: CliContext): Promise<number> {
  const findings = [...runChecks(ctx.io.env), ...(await runRemoteChecks(ctx.io.env))];
  for (const f of findings) {
    const tag = f.level === "ok" ? "ok   " : f.level === "warn" ? "WARN " : "ERROR";
    ctx.out(`${tag} ${f.check}: ${f.message.replace(/\n/g, "\n        ")}`);
    if (f.fix && f.level !== "ok") ctx.out(`        fix: ${f.fix}`);
  }
  const errors = findings.filter((f) => f.level === "error").length;
  const warns = findings.filter((f) => f.level === "warn").length;
  ctx.out(errors ? `${errors} error(s), ${warns} warning(s)` : `no errors, ${warns} warning(s)`);
  return errors ? 1 : 0;
}
