import { z } from "zod";
import type { CallRateLimits } from "../limits/call-rate.js";
import type { BucketRate } from "../limits/token-bucket.js";
import { ConfigError } from "./errors.js";

// The env of the limits per tenant (issue 20 item 9), parsed here so env.ts holds one block:
// the call rates per user and per team, and the per-team caps on children, login flows, MCP
// sessions and event streams. Each cap defaults to half its deployment cap (at least 1) when the
// app is distributed (the install flow is configured: many workspaces share the deployment), and to
// the whole deployment cap otherwise (one workspace: nobody else to be fair to, behaviour unchanged).

const UNIT_MS: Record<string, number> = {
  s: 1_000,
  sec: 1_000,
  second: 1_000,
  m: 60_000,
  min: 60_000,
  minute: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
};

/** A rate as written: `N/s`, `N/min`, `N/h`, or a bare `N` (calls a minute); the burst is N. */
export const rateSpec = z
  .string()
  .trim()
  .regex(
    /^[1-9][0-9]{0,6}(\/(s|sec|second|m|min|minute|h|hour))?$/,
    "must be calls per period, e.g. 120/min, 10/s, 3000/h, or a bare number of calls a minute",
  )
  .transform((v): BucketRate => {
    const [n, unit] = v.split("/");
    const count = Number(n);
    return { burst: count, perMs: count / (UNIT_MS[unit ?? "min"] ?? 60_000) };
  });

const perTeamCap = z.coerce.number().int().positive().optional();

/** The variables of the limits per tenant, spread into env.ts's schema. */
export const tenantLimitsEnv = {
  SLAUDE_CALL_RATE_PER_USER: rateSpec.default(rateSpec.parse("600/min")),
  SLAUDE_CALL_RATE_PER_TEAM: rateSpec.default(rateSpec.parse("6000/min")),
  SLAUDE_POOL_MAX_CHILDREN_PER_TEAM: perTeamCap,
  SLAUDE_LOGIN_MAX_CONCURRENT_PER_TEAM: perTeamCap,
  SLAUDE_MCP_MAX_SESSIONS_PER_TEAM: perTeamCap,
  SLAUDE_EVENTS_MAX_CLIENTS_PER_TEAM: perTeamCap,
};

/** What one team may hold or do, whatever the others do. */
export interface TenantLimits {
  readonly callRate: CallRateLimits;
  /** Live vendors (children and remote sessions) of one team. */
  readonly childrenPerTeam: number;
  /** Login flows in progress for one team. */
  readonly loginsPerTeam: number;
  /** Open MCP sessions of one team (per process; across the deployment on PostgreSQL). */
  readonly mcpSessionsPerTeam: number;
  /** Open GET /v1/events streams of one team. */
  readonly eventStreamsPerTeam: number;
}

/** The parsed variables tenantLimitsFrom reads. */
type Parsed = z.output<ReturnType<typeof z.object<typeof tenantLimitsEnv>>>;

/**
 * The per-team caps and rates from the parsed env and the deployment caps; `multiTenant`: the install
 * flow is on (defaults halve the deployment caps). A per-team cap above its deployment cap is a configuration error.
 */
export function tenantLimitsFrom(
  e: Parsed,
  deployment: { children: number; logins: number; mcpSessions: number; mcpLiveSessions: number; eventStreams: number },
  multiTenant: boolean,
): TenantLimits {
  // `whole`: what one team could hold with no per-team cap; `half`: the distributed default's base.
  const cap = (
    name: string,
    given: number | undefined,
    whole: number,
    wholeName: string,
    half: number = whole,
  ): number => {
    if (given !== undefined && given > Math.max(1, whole))
      throw new ConfigError(
        "invalid_env",
        `invalid environment\n${name}: ${given} is above ${wholeName} (${whole}); a team cannot hold more than the whole deployment`,
      );
    return given ?? (multiTenant ? Math.max(1, Math.floor(half / 2)) : Math.max(1, whole));
  };
  // Sessions: a process holds SLAUDE_MCP_MAX_SESSIONS, a deployment on PostgreSQL SLAUDE_MCP_MAX_LIVE_SESSIONS.
  const sessionsWhole = Math.max(deployment.mcpSessions, deployment.mcpLiveSessions);
  if (e.SLAUDE_CALL_RATE_PER_USER.perMs > e.SLAUDE_CALL_RATE_PER_TEAM.perMs)
    throw new ConfigError(
      "invalid_env",
      "invalid environment\nSLAUDE_CALL_RATE_PER_USER: is above SLAUDE_CALL_RATE_PER_TEAM; one user cannot call faster than their whole team",
    );
  return {
    callRate: { perUser: e.SLAUDE_CALL_RATE_PER_USER, perTeam: e.SLAUDE_CALL_RATE_PER_TEAM },
    childrenPerTeam: cap(
      "SLAUDE_POOL_MAX_CHILDREN_PER_TEAM",
      e.SLAUDE_POOL_MAX_CHILDREN_PER_TEAM,
      deployment.children,
      "SLAUDE_POOL_MAX_CHILDREN",
    ),
    loginsPerTeam: cap(
      "SLAUDE_LOGIN_MAX_CONCURRENT_PER_TEAM",
      e.SLAUDE_LOGIN_MAX_CONCURRENT_PER_TEAM,
      deployment.logins,
      "SLAUDE_LOGIN_MAX_CONCURRENT",
    ),
    mcpSessionsPerTeam: cap(
      "SLAUDE_MCP_MAX_SESSIONS_PER_TEAM",
      e.SLAUDE_MCP_MAX_SESSIONS_PER_TEAM,
      sessionsWhole,
      "SLAUDE_MCP_MAX_SESSIONS and SLAUDE_MCP_MAX_LIVE_SESSIONS",
      deployment.mcpSessions,
    ),
    eventStreamsPerTeam: cap(
      "SLAUDE_EVENTS_MAX_CLIENTS_PER_TEAM",
      e.SLAUDE_EVENTS_MAX_CLIENTS_PER_TEAM,
      deployment.eventStreams,
      "SLAUDE_EVENTS_MAX_CLIENTS",
    ),
  };
}
