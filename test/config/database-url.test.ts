import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/env.js";
import { ConfigError } from "../../src/config/errors.js";

describe("SLAUDE_DATABASE_URL", () => {
  it("is unset by default (SQLite), taken as given when it is a postgres:// URL", () => {
    expect(loadConfig({}).databaseUrl).toBeUndefined();
    expect(loadConfig({ SLAUDE_DATABASE_URL: "" }).databaseUrl).toBeUndefined();
    for (const url of [
      "postgres://slaude:pw@db:5432/slaude?sslmode=verify-full",
      "postgresql://slaude@127.0.0.1/slaude",
    ])
      expect(loadConfig({ SLAUDE_DATABASE_URL: url }).databaseUrl).toBe(url);
  });

  it("refuses anything else, naming the variable and never echoing the value (it holds a password)", () => {
    for (const bad of ["mysql://u:CANARY-pw-1@db/x", "CANARY-pw-2", "postgres://u:CANARY pw 3@db/x"]) {
      let err: unknown;
      try {
        loadConfig({ SLAUDE_DATABASE_URL: bad });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain("SLAUDE_DATABASE_URL");
      expect((err as Error).message).not.toContain("CANARY");
    }
  });
});
