import type { Logger } from "../log/logger.js";

/**
 * Makes an unhandled promise rejection a logged error instead of the end of the process (Node 20
 * exits on one): a bug in one request path must not take every user's broker down. Returns the
 * uninstaller. Logs the error's name and message only, never the value itself (it may hold a secret).
 */
export function logUnhandledRejections(log: Logger): () => void {
  const onRejection = (reason: unknown) => {
    const err = reason instanceof Error ? reason : undefined;
    log.error("unhandled promise rejection (a bug: please report it); the broker keeps running", {
      error: err ? `${err.name}: ${err.message}` : typeof reason,
    });
  };
  process.on("unhandledRejection", onRejection);
  return () => process.off("unhandledRejection", onRejection);
}
