import { parseArgs } from "node:util";
import { startApp } from "../../app/app.js";
import { tuneHeapForServing } from "../../app/heap.js";
import { loadConfig } from "../../config/env.js";
import { createLogger } from "../../log/logger.js";
import { type CliContext, UsageError } from "../context.js";
import { logUnhandledRejections } from "../rejection-guard.js";
import { unopenableCredentials } from "./doctor-runtime.js";

export const SERVE_HELP = `slaude-connect serve [--port N] [--host ADDR]

  Runs the broker until SIGTERM/SIGINT. --port and --host override PORT and SLAUDE_BIND_HOST.`;

/** Why listening failed, in one line naming the setting to change; undefined for other errors. */
export function listenFailure(err: unknown, host: string, port: number): string | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === "EADDRINUSE")
    return `error: port ${port} on ${host} is already in use: stop what holds it, or choose another with PORT (or --port)`;
  if (code === "EACCES")
    return `error: not allowed to listen on ${host}:${port}: choose a port above 1023 with PORT (or --port)`;
  if (code === "EADDRNOTAVAIL")
    return `error: ${host} is not an address of this machine: fix SLAUDE_BIND_HOST (or --host)`;
  return undefined;
}

/** `serve`: runs the broker until SIGTERM/SIGINT, then shuts down gracefully. */
export async function serveCommand(ctx: CliContext, argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { port: { type: "string" }, host: { type: "string" } },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length) throw new UsageError(`serve takes no arguments, got "${positionals[0]}"\n\n${SERVE_HELP}`);
  if (values.port !== undefined && !/^\d{1,5}$/.test(values.port))
    throw new UsageError(`--port: expected a port number, got ${JSON.stringify(values.port)}`);
  // The flags go through the same validation as the variables they override.
  const config = loadConfig({
    ...ctx.io.env,
    ...(values.port !== undefined ? { PORT: values.port } : {}),
    ...(values.host !== undefined ? { SLAUDE_BIND_HOST: values.host } : {}),
  });
  // Fail closed and loudly: a credential no configured key can open would fail every call on it.
  const lost = unopenableCredentials(config);
  if (lost.length) {
    ctx.err(
      `error: stored credentials are sealed under a key that is not configured (${lost.join(", ")}): put the old key in SLAUDE_ENCRYPTION_KEY_PREVIOUS, or revoke those connections; \`slaude-connect doctor\` explains`,
    );
    return 1;
  }
  tuneHeapForServing();
  const log = createLogger(config.logLevel, (l) => ctx.io.stderr.write(l));
  const unguard = logUnhandledRejections(log);
  let app: Awaited<ReturnType<typeof startApp>>;
  try {
    app = await startApp({ config, log });
  } catch (err) {
    unguard();
    const line = listenFailure(err, config.bindHost, config.port);
    if (!line) throw err;
    ctx.err(line);
    return 1;
  }
  // The start-up log ends with one block saying where to go next.
  ctx.io.stderr.write(app.banner);
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      log.info("shutting down", { signal });
      process.off("SIGTERM", onTerm);
      process.off("SIGINT", onInt);
      void app.close().then(() => {
        unguard();
        resolve();
      });
    };
    const onTerm = () => stop("SIGTERM");
    const onInt = () => stop("SIGINT");
    process.on("SIGTERM", onTerm);
    process.on("SIGINT", onInt);
  });
  return 0;
}
