import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/env.js";
import { ConfigError } from "../../src/config/errors.js";
import { parseHostTokens } from "../../src/config/host-token-teams.js";

// SLAUDE_HOST_TOKENS entries written <team_id>:<token> (T…) or <enterprise_id>:<token> (E…) bind a
// token to its tenant; anything else before the ':' is refused.

describe("host token team bindings", () => {
  it("splits bound entries, keeps unbound ones, and gives the auth check the bare tokens", () => {
    const c = loadConfig({
      SLAUDE_HOST_TOKENS: "T012AB:tok-one-aaaaaaaaaaaaaaaa,tok-two-bbbbbbbbbbbbbbbb,E0ORG:tok-three=cc/dd+",
    });
    expect(c.hostTokens).toEqual(["tok-one-aaaaaaaaaaaaaaaa", "tok-two-bbbbbbbbbbbbbbbb", "tok-three=cc/dd+"]);
    expect([...c.hostTokenTeams]).toEqual([
      ["tok-one-aaaaaaaaaaaaaaaa", "T012AB"],
      ["tok-three=cc/dd+", "E0ORG"],
    ]);
    expect(c.events).toEqual({ maxClients: 16, clientBuffer: 1000 });
  });

  it("refuses a malformed entry and a token bound to two teams (or bound and unbound), never echoing the token", () => {
    const secret = "sekrit-token-value-1234567890";
    for (const entries of [
      [`bad team:${secret}`],
      [`team-a:${secret}`],
      [`U0USER:${secret}`],
      [`t1:${secret}`],
      ["T1:"],
      [`T1:${secret}`, `T2:${secret}`],
      [secret, `T1:${secret}`],
      [`T1:${secret}`, secret],
    ]) {
      let err: unknown;
      try {
        parseHostTokens(entries);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).message).toContain("SLAUDE_HOST_TOKENS: entry");
      expect((err as ConfigError).message).not.toContain(secret);
    }
    expect(parseHostTokens([`T1:${secret}`, `T1:${secret}`]).tokens).toEqual([secret]);
  });
});
