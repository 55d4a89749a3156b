import { CodedError } from "../domain/errors.js";

/**
 * Codes of configuration failures; each message names the variable or file path at fault.
 * `missing_assets`: an installation without its static files (the console's index.html).
 */
export type ConfigErrorCode =
  | "invalid_env"
  | "missing_key"
  | "invalid_key"
  | "invalid_registry"
  | "registry_not_found"
  | "invalid_secret_file"
  | "root_without_uid_base"
  | "missing_assets";

/** A start-up configuration error; its message is safe to print (never contains a secret value). */
export class ConfigError extends CodedError<ConfigErrorCode> {
  override readonly name = "ConfigError";
}
