import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/env.js";

// SLAUDE_CALL_RATE_* and the *_PER_TEAM caps (issue 20 item 9): defaults, the distributed-app
// defaults, and errors that name the variable.

const base = { NODE_ENV: "test" } as const;
const distributed = {
  ...base,
  SLACK_CLIENT_ID: "1.2",
  SLACK_CLIENT_SECRET: "client-secret",
  SLACK_STATE_SECRET: "state-secret-0123456789",
  SLACK_SIGNING_SECRET: "signing",
};

describe("limits per tenant (env)", () => {
  it("defaults: 600 calls a minute per user, 6000 per team; caps per team are the whole deployment cap for one workspace", () => {
    const t = loadConfig(base).tenantLimits;
    expect(t.callRate.perUser).toEqual({ burst: 600, perMs: 600 / 60_000 });
    expect(t.callRate.perTeam).toEqual({ burst: 6000, perMs: 6000 / 60_000 });
    expect(t).toMatchObject({
      childrenPerTeam: 32,
      loginsPerTeam: 4,
      mcpSessionsPerTeam: 10_000,
      eventStreamsPerTeam: 16,
    });
  });

  it("a distributed app (the install flow on) halves each deployment cap per team, at least 1", () => {
    expect(loadConfig(distributed).tenantLimits).toMatchObject({
      childrenPerTeam: 16,
      loginsPerTeam: 2,
      mcpSessionsPerTeam: 500,
      eventStreamsPerTeam: 8,
    });
    expect(
      loadConfig({ ...distributed, SLAUDE_POOL_MAX_CHILDREN: "1", SLAUDE_LOGIN_MAX_CONCURRENT: "0" }).tenantLimits,
    ).toMatchObject({ childrenPerTeam: 1, loginsPerTeam: 1 });
  });

  it("takes explicit values", () => {
    const t = loadConfig({
      ...base,
      SLAUDE_CALL_RATE_PER_USER: "10/s",
      SLAUDE_CALL_RATE_PER_TEAM: "50000/h",
      SLAUDE_POOL_MAX_CHILDREN_PER_TEAM: "3",
      SLAUDE_LOGIN_MAX_CONCURRENT_PER_TEAM: "1",
      SLAUDE_MCP_MAX_SESSIONS_PER_TEAM: "20",
      SLAUDE_EVENTS_MAX_CLIENTS_PER_TEAM: "2",
    }).tenantLimits;
    expect(t.callRate.perUser).toEqual({ burst: 10, perMs: 0.01 });
    expect(t.callRate.perTeam.burst).toBe(50_000);
    expect(t).toMatchObject({ childrenPerTeam: 3, loginsPerTeam: 1, mcpSessionsPerTeam: 20, eventStreamsPerTeam: 2 });
  });

  it.each([
    [{ SLAUDE_CALL_RATE_PER_USER: "fast" }, /SLAUDE_CALL_RATE_PER_USER: must be calls per period/],
    [{ SLAUDE_CALL_RATE_PER_TEAM: "0/min" }, /SLAUDE_CALL_RATE_PER_TEAM: must be calls per period/],
    [{ SLAUDE_POOL_MAX_CHILDREN_PER_TEAM: "0" }, /SLAUDE_POOL_MAX_CHILDREN_PER_TEAM/],
    [
      { SLAUDE_POOL_MAX_CHILDREN: "4", SLAUDE_POOL_MAX_CHILDREN_PER_TEAM: "5" },
      /SLAUDE_POOL_MAX_CHILDREN_PER_TEAM: 5 is above SLAUDE_POOL_MAX_CHILDREN \(4\)/,
    ],
    [
      { SLAUDE_EVENTS_MAX_CLIENTS_PER_TEAM: "17" },
      /SLAUDE_EVENTS_MAX_CLIENTS_PER_TEAM: 17 is above SLAUDE_EVENTS_MAX_CLIENTS/,
    ],
    [
      { SLAUDE_CALL_RATE_PER_USER: "100/s", SLAUDE_CALL_RATE_PER_TEAM: "100/min" },
      /SLAUDE_CALL_RATE_PER_USER: is above SLAUDE_CALL_RATE_PER_TEAM/,
    ],
  ])("refuses %j with a message naming the variable", (env, message) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(message);
  });
});
