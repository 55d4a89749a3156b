import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { checkHostTokenTenancy } from "../../src/cli/commands/doctor-tenancy.js";
import { loadConfig } from "../../src/config/env.js";
import { StaticTenantDirectory } from "../../src/tenancy/tenant-directory.js";

// doctor on unbound host tokens: fine with one installation, a warning with several, an error in
// production (where serve refuses to start); never the token in what it prints.

const UNBOUND = `host-${randomBytes(16).toString("hex")}`;
const BOUND = `host-${randomBytes(16).toString("hex")}`;
const KEY = randomBytes(32).toString("base64");
const config = (env: Record<string, string>) =>
  loadConfig({ SLAUDE_ENCRYPTION_KEY: KEY, SLAUDE_HOST_TOKENS: `T012AB:${BOUND},${UNBOUND}`, ...env });

describe("doctor: host token tenants", () => {
  it("is ok with one installation, warns with several, and is an error in production with several", async () => {
    const one = await checkHostTokenTenancy(config({ NODE_ENV: "test" }), new StaticTenantDirectory(1));
    expect(one.level).toBe("ok");
    const dev = await checkHostTokenTenancy(config({ NODE_ENV: "development" }), new StaticTenantDirectory(3));
    expect(dev).toMatchObject({ check: "host token tenants", level: "warn" });
    expect(dev.message).toContain("1 host token(s)");
    const prod = await checkHostTokenTenancy(config({ NODE_ENV: "production" }), new StaticTenantDirectory(3));
    expect(prod.level).toBe("error");
    expect(prod.fix).toContain("<team_id>:<token>");
    for (const f of [one, dev, prod]) expect(JSON.stringify(f)).not.toContain(UNBOUND);
    const bound = await checkHostTokenTenancy(
      loadConfig({ NODE_ENV: "production", SLAUDE_ENCRYPTION_KEY: KEY, SLAUDE_HOST_TOKENS: `T012AB:${BOUND}` }),
      new StaticTenantDirectory(3),
    );
    expect(bound.level).toBe("ok");
  });

  it("an installations directory that cannot answer is an error, not a pass", async () => {
    const broken = {
      enterpriseOf: async () => null,
      liveInstallations: async (): Promise<number> => Promise.reject(new Error("connection refused")),
    };
    expect((await checkHostTokenTenancy(config({ NODE_ENV: "test" }), broken)).level).toBe("error");
  });
});
