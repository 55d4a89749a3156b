import { ConfigError } from "./errors.js";

// SLAUDE_HOST_TOKENS entries may bind a token to one Slack team: `<team_id>:<token>`. The binding
// decides which team's call events the token may stream (GET /v1/events); an unbound token is
// refused there (fail closed). Tokens are random strings (`openssl rand -base64 32` has no ':'),
// so the first ':' is the separator. Messages name the entry's position, never its value.

const TEAM_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** The host tokens as the auth check needs them, and the team each bound token belongs to. */
export interface HostTokenList {
  readonly tokens: readonly string[];
  /** token → team id, for the entries written `<team_id>:<token>`. */
  readonly teams: ReadonlyMap<string, string>;
}

/** Splits SLAUDE_HOST_TOKENS entries into tokens and team bindings; throws ConfigError on a bad entry or a conflict. */
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
    if (!TEAM_ID.test(team) || token === "") {
      throw new ConfigError("invalid_env", `invalid environment\nSLAUDE_HOST_TOKENS: entry ${i + 1} is not <team_id>:<token> (a team id of letters, digits, '.', '_' or '-', then the token)`);
    }
    const known = teams.get(token);
    if ((known !== undefined && known !== team) || unbound.has(token)) throw conflict(i);
    if (known === undefined) tokens.push(token);
    teams.set(token, team);
  });
  return { tokens, teams };
}

function conflict(i: number): ConfigError {
  return new ConfigError("invalid_env", `invalid environment\nSLAUDE_HOST_TOKENS: entry ${i + 1} repeats a token with another team binding (a token belongs to one team, or to none)`);
}
