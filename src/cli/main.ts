import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ConfigError } from "../config/errors.js";
import { ConnectionError } from "../connections/errors.js";
import { VERSION } from "../domain/version.js";
import { StoreError } from "../store/errors.js";
import { VaultError } from "../vault/errors.js";
import { APPROVALS_HELP, approvalsCommand } from "./commands/approvals.js";
import { AUDIT_HELP, auditCommand } from "./commands/audit.js";
import { CONNECTIONS_HELP, connectionsCommand } from "./commands/connections.js";
import { doctorCommand } from "./commands/doctor.js";
import { GRANTS_HELP, grantsCommand } from "./commands/grants.js";
import { INSTALLATIONS_HELP, installationsCommand } from "./commands/installations.js";
import { KEYS_HELP, keysCommand } from "./commands/keys.js";
import { migrateCommand } from "./commands/migrate.js";
import { MIGRATE_STORE_HELP, migrateStoreCommand } from "./commands/migrate-store.js";
import { REGISTRY_HELP, registryCommand } from "./commands/registry.js";
import { STATS_HELP, statsCommand } from "./commands/stats.js";
import { CliContext, type CliIo, UsageError } from "./context.js";

export const HELP = `slaude-connect: connection broker MCP server for Slack

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
  const ctx = new CliContext(io);
  try {
    switch (command) {
      case "serve":
        // Loaded on demand: the server pulls in Bolt, the MCP SDK and playwright, which no other command needs.
        return await (await import("./commands/serve.js")).serveCommand(ctx, rest);
      case "migrate":
        noArguments("migrate", rest);
        return await migrateCommand(ctx);
      case "migrate-store":
        return await migrateStoreCommand(ctx, rest);
      case "connections":
        return await connectionsCommand(ctx, rest);
      case "grants":
        return await grantsCommand(ctx, rest);
      case "installations":
        return await installationsCommand(ctx, rest);
      case "approvals":
        return await approvalsCommand(ctx, rest);
      case "audit":
        return await auditCommand(ctx, rest);
      case "stats":
        return await statsCommand(ctx, rest);
      case "keys":
        return await keysCommand(ctx, rest);
      case "registry":
        return await registryCommand(ctx, rest);
      case "doctor":
        noArguments("doctor", rest);
        return await doctorCommand(ctx);
      case "--version":
      case "-v":
      case "version":
        ctx.out(VERSION);
        return 0;
      case undefined:
      case "help":
      case "--help":
      case "-h":
        ctx.out(HELP);
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command "${command}"\n\n${HELP}`);
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
