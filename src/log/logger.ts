/** Log levels, in increasing severity. */
export type LogLevel = "debug" | "info" | "warn" | "error";

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Structured fields: identifiers and codes only; callers never pass secrets or argument values. */
export type LogFields = Record<string, string | number | boolean | null | undefined>;

/** A structured logger writing one JSON object per line. */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /**
   * A logger whose every line also carries `fields` (a line's own fields win). The request and
   * the call pass theirs down: `log.with({ requestId })`, then `.with({ callId })`.
   */
  with(fields: LogFields): Logger;
}

/**
 * A logger that writes JSON lines to `write` (default: stderr) at or above `level`. Correlation ids
 * are bound explicitly with `with` and passed down the request and the call (docs/operations.md#logs);
 * there is no ambient context (an AsyncLocalStorage would put a promise hook on every promise).
 */
export function createLogger(
  level: LogLevel = "info",
  write: (line: string) => void = (l) => process.stderr.write(l),
): Logger {
  return boundLogger(RANK[level], write, undefined);
}

function boundLogger(min: number, write: (line: string) => void, bound: LogFields | undefined): Logger {
  const emit = (lvl: LogLevel, msg: string, fields?: LogFields) => {
    if (RANK[lvl] < min) return;
    write(`${JSON.stringify({ t: new Date().toISOString(), level: lvl, msg, ...bound, ...fields })}\n`);
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    with: (fields) => boundLogger(min, write, { ...bound, ...fields }),
  };
}

/** A logger that keeps lines in memory, for tests that assert what was (not) logged. */
export function memoryLogger(level: LogLevel = "debug"): Logger & { lines: string[] } {
  const lines: string[] = [];
  return Object.assign(
    createLogger(level, (l) => lines.push(l)),
    { lines },
  );
}
