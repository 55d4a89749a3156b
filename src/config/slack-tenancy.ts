import { ConfigError } from "./errors.js";

// The Slack settings that decide tenants, parsed for env.ts: SLAUDE_ADMINS per team, and the install
// flow of a distributed app (client id, client secret and state secret together, the authorize page,
// the allowlist). Messages name the variable and the entry's position, never a value.

const SLACK_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** One SLAUDE_ADMINS entry: a user, in one team when `teamId` is set (bare ids apply to the single installation only). */
export interface AdminEntry {
  readonly teamId: string | undefined;
  readonly userId: string;
}

/** Parses SLAUDE_ADMINS entries (`<team_id>:<user_id>` or a bare user id); messages name the position, not the value. */
export function parseAdmins(entries: readonly string[]): AdminEntry[] {
  return entries.map((entry, i) => {
    const at = entry.indexOf(":");
    const teamId = at < 0 ? undefined : entry.slice(0, at);
    const userId = at < 0 ? entry : entry.slice(at + 1);
    if ((teamId !== undefined && !SLACK_ID.test(teamId)) || !SLACK_ID.test(userId)) {
      throw new ConfigError(
        "invalid_env",
        `invalid environment\nSLAUDE_ADMINS: entry ${i + 1} is not <team_id>:<user_id> or a user id (letters, digits, '.', '_' or '-')`,
      );
    }
    return { teamId, userId };
  });
}

/** Slack's OAuth install flow (multi-workspace mode): on when the client id, client secret and state secret are all set. */
export interface SlackDistribution {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly stateSecret: string;
  /** Slack's authorize page (SLACK_OAUTH_AUTHORIZE_URL; tests point it at a fake). */
  readonly authorizeUrl: string;
  /** Team or enterprise ids allowed to install (SLAUDE_SLACK_ALLOWED_TEAMS); empty: anyone. */
  readonly allowedTenants: readonly string[];
}

/** The parsed variables the install flow reads. */
export interface DistributionVars {
  readonly SLACK_CLIENT_ID?: string | undefined;
  readonly SLACK_CLIENT_SECRET?: string | undefined;
  readonly SLACK_STATE_SECRET?: string | undefined;
  readonly SLACK_OAUTH_AUTHORIZE_URL: string;
  readonly SLAUDE_SLACK_ALLOWED_TEAMS: readonly string[];
}

/** The install flow's settings, or undefined when it is off; half of it set is a ConfigError naming what is missing. */
export function slackDistribution(e: DistributionVars): SlackDistribution | undefined {
  const vars = [e.SLACK_CLIENT_ID, e.SLACK_CLIENT_SECRET, e.SLACK_STATE_SECRET];
  if (vars.some(Boolean) && !vars.every(Boolean)) {
    const missing = [
      !e.SLACK_CLIENT_ID && "SLACK_CLIENT_ID",
      !e.SLACK_CLIENT_SECRET && "SLACK_CLIENT_SECRET",
      !e.SLACK_STATE_SECRET && "SLACK_STATE_SECRET",
    ].filter(Boolean);
    throw new ConfigError(
      "invalid_env",
      `invalid environment\nthe Slack install flow needs SLACK_CLIENT_ID, SLACK_CLIENT_SECRET and SLACK_STATE_SECRET together: set ${missing.join(" and ")}, or unset the others`,
    );
  }
  if (e.SLAUDE_SLACK_ALLOWED_TEAMS.some((t) => !SLACK_ID.test(t)))
    throw new ConfigError(
      "invalid_env",
      "invalid environment\nSLAUDE_SLACK_ALLOWED_TEAMS: each entry is a team (T…) or enterprise (E…) id",
    );
  if (!e.SLACK_CLIENT_ID || !e.SLACK_CLIENT_SECRET || !e.SLACK_STATE_SECRET) return undefined;
  return {
    clientId: e.SLACK_CLIENT_ID,
    clientSecret: e.SLACK_CLIENT_SECRET,
    stateSecret: e.SLACK_STATE_SECRET,
    authorizeUrl: e.SLACK_OAUTH_AUTHORIZE_URL,
    allowedTenants: e.SLAUDE_SLACK_ALLOWED_TEAMS,
  };
}
