import { startApp } from "../../app/app.js";
import { createLogger } from "../../log/logger.js";
import type { CliContext } from "../context.js";
import { logUnhandledRejections } from "../rejection-guard.js";

/** `serve`: runs the broker until SIGTERM/SIGINT, then shuts down gracefully. */
export async function serveCommand(ctx: CliContext): Promise<number> {
  const config = ctx.config;
  const log = createLogger(config.logLevel, (l) => ctx.io.stderr.write(l));
  const unguard = logUnhandledRejections(log);
  const app = await startApp({ config, log });
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
