import { readFileSync, statSync } from "node:fs";
import { ConfigError } from "./errors.js";

// `<NAME>_FILE` variants of secret variables: the secret is read from a file (a Docker or
// Kubernetes secret, a systemd credential) so it never sits in the process environment, where a
// process of the same uid could read it from /proc/<pid>/environ.

/** Secret variables that may be given as `<NAME>_FILE` instead (exactly one of the two). */
export const SECRET_VARIABLES = [
  "SLAUDE_ENCRYPTION_KEY",
  "SLAUDE_ENCRYPTION_KEY_PREVIOUS",
  "SLAUDE_HOST_TOKENS",
  "SLAUDE_METRICS_TOKEN",
  "SLACK_BOT_TOKEN",
  "SLACK_SIGNING_SECRET",
  "SLACK_APP_TOKEN",
  "SLACK_CLIENT_ID",
  "SLACK_CLIENT_SECRET",
  "SLACK_STATE_SECRET",
  "SLAUDE_DATABASE_URL",
] as const;

/** Comma-separated lists: in a file, one entry per line works too. */
const LIST_VARIABLES: ReadonlySet<string> = new Set(["SLAUDE_ENCRYPTION_KEY_PREVIOUS", "SLAUDE_HOST_TOKENS"]);

const MAX_SECRET_FILE_BYTES = 64 << 10;

const isSet = (v: string | undefined): v is string => v !== undefined && v.trim() !== "";

/**
 * Reads the secret file named by `${name}_FILE`. It must be a regular file of at most 64 KiB that
 * no other user can read or write and its group cannot write; errors name the variable and the
 * path, never the contents.
 */
export function readSecretFile(name: string, file: string, list = LIST_VARIABLES.has(name)): string {
  const v = `${name}_FILE`;
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(file);
  } catch (e) {
    throw new ConfigError(
      "invalid_secret_file",
      `${v}: ${file} cannot be read (${(e as NodeJS.ErrnoException).code ?? "error"})`,
    );
  }
  if (!st.isFile()) throw new ConfigError("invalid_secret_file", `${v}: ${file} is not a regular file`);
  const mode = Number(st.mode) & 0o777;
  // Others must have no access at all; a group may read (Kubernetes fsGroup) but never write.
  if (mode & 0o027) {
    throw new ConfigError(
      "invalid_secret_file",
      `${v}: ${file} has mode 0${mode.toString(8)}, open to other users: \`chmod 600 ${file}\` (or 640 for a group that must read it)`,
    );
  }
  if (Number(st.size) > MAX_SECRET_FILE_BYTES)
    throw new ConfigError("invalid_secret_file", `${v}: ${file} is larger than 64 KiB`);
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new ConfigError(
      "invalid_secret_file",
      `${v}: ${file} cannot be read (${(e as NodeJS.ErrnoException).code ?? "error"})`,
    );
  }
  const value = list
    ? text
        .split(/[\n,]/)
        .map((s) => s.trim())
        .filter(Boolean)
        .join(",")
    : text.trim();
  if (!value) throw new ConfigError("invalid_secret_file", `${v}: ${file} is empty`);
  return value;
}

/**
 * A copy of `env` where every secret given as `<NAME>_FILE` is read into `<NAME>`. Setting both
 * forms of one secret is an error naming both, so there is never a doubt which one is in force.
 */
export function withSecretFiles(
  env: NodeJS.ProcessEnv,
  names: readonly string[] = SECRET_VARIABLES,
): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env };
  for (const name of names) {
    const file = env[`${name}_FILE`];
    if (!isSet(file)) continue;
    if (isSet(env[name]))
      throw new ConfigError("invalid_secret_file", `${name} and ${name}_FILE are both set: set only one of them`);
    out[name] = readSecretFile(name, file.trim());
  }
  return out;
}
