import { fileURLToPath } from "node:url";
import { ConfigError } from "../config/errors.js";
import { ConnectionError } from "../connections/errors.js";
import { StoreError } from "../store/errors.js";
import { VaultError } from "../vault/errors.js";
import { auditCommand, AUDIT_HELP } from "./commands/audit.js";
import { connectionsCommand, CONNECTIONS_HELP } from "./commands/connections.js";
import { doctorCommand } from "./commands/doctor.js";
import { grantsCommand, GRANTS_HELP } from "./commands/grants.js";
import { keysCommand, KEYS_HELP } from "./commands/keys.js";
import { migrateCommand } from "./commands/migrate.js";
import { registryCommand, REGISTRY_HELP } from "./commands/registry.js";
import { serveCommand } from "./commands/serve.js";
import { CliContext, UsageError, type CliIo } from "./context.js";

export const HELP = `slaude-connect: connection broker MCP server for Slack

usage: slaude-connect <command> [options]

  serve         Run the broker (HTTP server, MCP endpoint, Slack app, reapers)
  migrate       Apply database migrations
  connections   list | add | revoke
  grants        list | revoke
  audit         Query or export (--jsonl) the audit log
  keys          rotate | generate
  registry      schema | check FILE
  doctor        Check the setup and say how to fix what is wrong

Configuration comes from environment variables (see .env.example).

${CONNECTIONS_HELP}

${GRANTS_HELP}

${AUDIT_HELP}

${KEYS_HELP}

${REGISTRY_HELP}`;

/** Runs one CLI invocation and returns its exit code (0 ok, 1 failed, 2 usage or configuration). */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  const ctx = new CliContext(io);
  try {
    switch (command) {
      case "serve":
        return await serveCommand(ctx);
      case "migrate":
        return await migrateCommand(ctx);
      case "connections":
        return await connectionsCommand(ctx, rest);
      case "grants":
        return await grantsCommand(ctx, rest);
      case "audit":
        return await auditCommand(ctx, rest);
      case "keys":
        return await keysCommand(ctx, rest);
      case "registry":
        return await registryCommand(ctx, rest);
      case "doctor":
        return await doctorCommand(ctx);
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
      ctx.err(err.message);
      return 2;
    }
    throw err;
  } finally {
    await ctx.close();
  }
}

// Run when executed directly (npm start, bin/slaude-connect.js), not when imported by tests.
const entry = process.argv[1] ? fileURLToPath(import.meta.url) === process.argv[1] || process.argv[1].endsWith("bin/slaude-connect.js") : false;
if (entry) {
  // `slaude-connect audit --jsonl | head` closes our stdout early: that is a normal end, not a crash.
  process.stdout.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code === "EPIPE") process.exit(0);
    throw e;
  });
  const code = await runCli(process.argv.slice(2), { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env });
  process.exitCode = code;
}
