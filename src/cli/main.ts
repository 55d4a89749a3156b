import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ConfigError } from "../config/errors.js";
import { ConnectionError } from "../connections/errors.js";
import { VERSION } from "../domain/version.js";
import { StoreError } from "../store/errors.js";
import { VaultError } from "../vault/errors.js";
import { CliContext, type CliIo, UsageError } from "./context.js";

/**
 * The full usage text. Each command's own help lives in its module, so this loads them all; only
 * `--help` and a usage error need it, and every other invocation loads just its own command (`serve`
 * then never loads PostgreSQL's or Slack's client through the commands that use them).
 */
export async function helpText(): Promise<string> {
  const [
    { APPROVALS_HELP },
    { AUDIT_HELP },
    { CONNECTIONS_HELP },
    { GRANTS_HELP },
    { INSTALLATIONS_HELP },
    { KEYS_HELP },
    { MIGRATE_STORE_HELP },
    { REGISTRY_HELP },
    { STATS_HELP },
  ] = await Promise.all([
    import("./commands/approvals.js"),
    import("./commands/audit.js"),
    import("./commands/connections.js"),
    import("./commands/grants.js"),
    import("./commands/installations.js"),
    import("./commands/keys.js"),
    import("./commands/migrate-store.js"),
    import("./commands/registry.js"),
    import("./commands/stats.js"),
  ]);
  return `slaude-connect: connection broker MCP server for Slack

usage: slaude-connect <command> [options]
       slaude-connect --version | --help

  serve         Run the broker (HTTP server, MCP endpoint, Slack app, reapers) [--port N] [--host ADDR]
  migrate       Apply database migrations
  migrate-store Copy the SQLite file into PostgreSQL [--to postgres://…]
  connections   list | add | revoke | login
  approvals     list | decide
  grants        list | revoke
  installations list | check | disable | enable (Slack workspaces and orgs)
  audit         Query or export (--jsonl) the audit log
  stats         Calls per minute by outcome and latency p50/p95 over the last hour
  keys          rotate | generate
  registry      schema | check FILE | inspect SERVICE | changes | accept | reject
  doctor        Check the setup and say how to fix what is wrong

Configuration comes from environment variables (see .env.example).

${CONNECTIONS_HELP}

${GRANTS_HELP}

${INSTALLATIONS_HELP}

${APPROVALS_HELP}

${AUDIT_HELP}

${STATS_HELP}

${KEYS_HELP}

${REGISTRY_HELP}

${MIGRATE_STORE_HELP}`;
}

/** Refuses options and arguments for a command that takes none, rather than ignoring them. */
function noArguments(command: string, argv: readonly string[]): void {
  if (argv.length)
    throw new UsageError(
      `slaude-connect ${command}: takes no options or arguments, got "${argv[0]}" (see slaude-connect --help)`,
    );
}

/** Runs one CLI invocation and returns its exit code (0 ok, 1 failed, 2 usage or configuration). */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  // Every command but serve may open the store through the context; serve opens its own (app/store-factory).
  const connect = command === "serve" ? undefined : (await import("../app/store-connect.js")).connectDeployment;
  const ctx = new CliContext(io, connect);
  try {
    switch (command) {
      case "serve":
        // Each command is loaded on demand: the server pulls in the MCP SDK and the HTTP stack, which no
        // other command needs, and it need not load what other commands use (pg, @slack/web-api).
        return await (await import("./commands/serve.js")).serveCommand(ctx, rest);
      case "migrate":
        noArguments("migrate", rest);
        return await (await import("./commands/migrate.js")).migrateCommand(ctx);
      case "migrate-store":
        return await (await import("./commands/migrate-store.js")).migrateStoreCommand(ctx, rest);
      case "connections":
        return await (await import("./commands/connections.js")).connectionsCommand(ctx, rest);
      case "grants":
        return await (await import("./commands/grants.js")).grantsCommand(ctx, rest);
      case "installations":
        return await (await import("./commands/installations.js")).installationsCommand(ctx, rest);
      case "approvals":
        return await (await import("./commands/approvals.js")).approvalsCommand(ctx, rest);
      case "audit":
        return await (await import("./commands/audit.js")).auditCommand(ctx, rest);
      case "stats":
        return await (await import("./commands/stats.js")).statsCommand(ctx, rest);
      case "keys":
        return await (await import("./commands/keys.js")).keysCommand(ctx, rest);
      case "registry":
        return await (await import("./commands/registry.js")).registryCommand(ctx, rest);
      case "doctor":
        noArguments("doctor", rest);
        return await (await import("./commands/doctor.js")).doctorCommand(ctx);
      case "--version":
      case "-v":
      case "version":
        ctx.out(VERSION);
        return 0;
      case undefined:
      case "help":
      case "--help":
      case "-h":
        ctx.out(await helpText());
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command "${command}"\n\n${await helpText()}`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      ctx.err(err.message);
      return 2;
    }
    if (err instanceof ConfigError) {
      ctx.err(`configuration error: ${err.message}`);
      return 2;
    }
    if (err instanceof StoreError || err instanceof VaultError || err instanceof ConnectionError) {
      ctx.err(`error: ${err.message}`);
      return 1;
    }
    if (err instanceof Error && (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      // node:util parseArgs names the flag; one line, with where to look, instead of ignoring it.
      ctx.err(
        `slaude-connect ${command ?? ""}: ${err.message.split("\n")[0]!.split(". ")[0]} (see slaude-connect --help)`,
      );
      return 2;
    }
    throw err;
  } finally {
    await ctx.close();
  }
}

/** The process entry: real streams and env, EPIPE on stdout is a normal end; sets process.exitCode. */
export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  // `slaude-connect audit --jsonl | head` closes our stdout early: that is a normal end, not a crash.
  process.stdout.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code === "EPIPE") process.exit(0);
    throw e;
  });
  process.exitCode = await runCli(argv, {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
  });
}

/** Whether `script` (process.argv[1]) is this module, through any symlink (npm's bin links, npx, global installs). */
export function isEntryPoint(script: string | undefined, moduleUrl: string): boolean {
  if (!script) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}

// `node dist/cli/main.js` and `tsx src/cli/main.ts` run it; the installed bin calls main() itself;
// tests import runCli without running anything.
if (isEntryPoint(process.argv[1], import.meta.url)) await main();
