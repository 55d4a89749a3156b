import { bindingOfId } from "../tenancy/host-binding.js";
import { ConfigError } from "./errors.js";

// SLAUDE_HOST_TOKENS entries may bind a token to one tenant: `<team_id>:<token>` (a Slack team id,
// `T…`) or `<enterprise_id>:<token>` (an Enterprise Grid org, `E…`). A bound token acts only in its
// tenant's threads (/mcp, /v1/turns, /v1/events; src/tenancy/host-binding.ts); an unbound one only
// while the deployment serves a single installation, and never on /v1/events. Tokens are random
// strings (`openssl rand -base64 32` has no ':'), so the first ':' is the separator. Messages name
// the entry's position, never its value.

/** The host tokens as the auth check needs them, and the tenant each bound token belongs to. */
export interface HostTokenList {
  readonly tokens: readonly string[];
  /** token → the team id (`T…`) or enterprise id (`E…`) of the entries written `<id>:<token>`. */
  readonly teams: ReadonlyMap<string, string>;
}

/** Splits SLAUDE_HOST_TOKENS entries into tokens and tenant bindings; throws ConfigError on a bad entry or a conflict. */
export function parseHostTokens(entries: readonly string[]): HostTokenList {
  const tokens: string[] = [];
  const teams = new Map<string, string>();
  const unbound = new Set<string>();
  entries.forEach((entry, i) => {
    const at = entry.indexOf(":");
    if (at < 0) {
      if (teams.has(entry)) throw conflict(i);
      unbound.add(entry);
      tokens.push(entry);
      return;
    }
    const team = entry.slice(0, at);
    const token = entry.slice(at + 1);
    if (bindingOfId(team) === undefined || token === "") {
      throw new ConfigError(
        "invalid_env",
        `invalid environment\nSLAUDE_HOST_TOKENS: entry ${i + 1} is not <team_id>:<token> or <enterprise_id>:<token> (a Slack team id starting with T or an enterprise id starting with E, of letters, digits, '.', '_' or '-', then the token)`,
      );
    }
    const known = teams.get(token);
    if ((known !== undefined && known !== team) || unbound.has(token)) throw conflict(i);
    if (known === undefined) tokens.push(token);
    teams.set(token, team);
  });
  return { tokens, teams };
}

function conflict(i: number): ConfigError {
  return new ConfigError(
    "invalid_env",
    `invalid environment\nSLAUDE_HOST_TOKENS: entry ${i + 1} repeats a token with another binding (a token belongs to one team or org, or to none)`,
  );
}
