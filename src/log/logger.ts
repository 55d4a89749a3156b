import { currentLogContext } from "./context.js";

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
}

/**
 * A logger that writes JSON lines to `write` (default: stderr) at or above `level`; each line
 * carries the request id and call id of the flow that wrote it (src/log/context.ts).
 */
export function createLogger(
  level: LogLevel = "info",
  write: (line: string) => void = (l) => process.stderr.write(l),
): Logger {
  const emit = (lvl: LogLevel, msg: string, fields?: LogFields) => {
    if (RANK[lvl] < RANK[level]) return;
    write(`${JSON.stringify({ t: new Date().toISOString(), level: lvl, msg, ...currentLogContext(), ...fields })}\n`);
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
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
