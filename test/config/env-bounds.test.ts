import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/env.js";

// The memory bounds of issue 9 item 15 are settings with defaults, validated like every variable.

describe("memory-bound settings", () => {
  it("default to 1000 sessions (10k live per deployment) idle 30 min, 10k membership answers for 60 s, 1000 credentials for 15 min", () => {
    const c = loadConfig({ NODE_ENV: "test" });
    expect(c.mcpSessions).toEqual({ maxSessions: 1_000, maxLiveSessions: 10_000, idleMs: 1_800_000 });
    expect(c.caches).toEqual({
      membership: { max: 10_000, ttlMs: 60_000 },
      credentials: { max: 1_000, ttlMs: 900_000 },
    });
  });

  it("are read from the environment", () => {
    const c = loadConfig({
      NODE_ENV: "test",
      SLAUDE_MCP_MAX_SESSIONS: "5",
      SLAUDE_MCP_SESSION_IDLE_SECONDS: "30",
      SLAUDE_MCP_MAX_LIVE_SESSIONS: "6",
      SLAUDE_MEMBERSHIP_CACHE_MAX: "7",
      SLAUDE_MEMBERSHIP_CACHE_SECONDS: "8",
      SLAUDE_CREDENTIAL_CACHE_MAX: "9",
      SLAUDE_CREDENTIAL_CACHE_SECONDS: "10",
    });
    expect(c.mcpSessions).toEqual({ maxSessions: 5, maxLiveSessions: 6, idleMs: 30_000 });
    expect(c.caches).toEqual({ membership: { max: 7, ttlMs: 8_000 }, credentials: { max: 9, ttlMs: 10_000 } });
  });

  it("refuse zero or a non-number, naming the variable", () => {
    expect(() => loadConfig({ NODE_ENV: "test", SLAUDE_MCP_MAX_SESSIONS: "0" })).toThrow(/SLAUDE_MCP_MAX_SESSIONS/);
    expect(() => loadConfig({ NODE_ENV: "test", SLAUDE_MCP_MAX_LIVE_SESSIONS: "-1" })).toThrow(
      /SLAUDE_MCP_MAX_LIVE_SESSIONS/,
    );
    expect(() => loadConfig({ NODE_ENV: "test", SLAUDE_CREDENTIAL_CACHE_SECONDS: "soon" })).toThrow(
      /SLAUDE_CREDENTIAL_CACHE_SECONDS/,
    );
  });
});
