import { describe, expect, it } from "vitest";
import {
  bindingOfId,
  factsNeeded,
  type HostBinding,
  hostMayAct,
  type TenantFacts,
  type TenantRefusal,
  tenantRefusalCode,
  tenantRefusalMessage,
} from "../../src/tenancy/host-binding.js";
import { StaticTenantDirectory, singleInstallation } from "../../src/tenancy/tenant-directory.js";
import { unboundTokenFinding } from "../../src/tenancy/unbound-tokens.js";

// hostMayAct, the one decision of which tenant a host token may act in, against an independent
// oracle over every combination of binding and tenant facts (missing facts included).

const BINDINGS: HostBinding[] = [
  { kind: "team", teamId: "TA" },
  { kind: "team", teamId: "TB" },
  { kind: "enterprise", enterpriseId: "E1" },
  { kind: "enterprise", enterpriseId: "E2" },
  { kind: "unbound" },
];
const TEAMS = ["TA", "TB", "TC"];
const ENTERPRISES: (string | null | undefined)[] = [undefined, null, "E1", "E2"];
const INSTALLATIONS: (number | undefined)[] = [undefined, 0, 1, 2, 7];

/** The oracle, written as the sentence of the issue: the binding's own team, its org's teams, or anything while one installation is served. */
function oracle(b: HostBinding, f: TenantFacts): boolean {
  if (b.kind === "team") return f.teamId === b.teamId;
  if (b.kind === "enterprise") return typeof f.enterpriseId === "string" && f.enterpriseId === b.enterpriseId;
  return typeof f.liveInstallations === "number" && f.liveInstallations < 2;
}

describe("hostMayAct", () => {
  const rows: [HostBinding, TenantFacts][] = [];
  for (const b of BINDINGS)
    for (const teamId of TEAMS)
      for (const e of ENTERPRISES)
        for (const n of INSTALLATIONS) {
          rows.push([
            b,
            {
              teamId,
              ...(e !== undefined ? { enterpriseId: e } : {}),
              ...(n !== undefined ? { liveInstallations: n } : {}),
            },
          ]);
        }

  it(`agrees with the oracle on all ${rows.length} combinations, and every refusal has a reason with a code and a sentence`, () => {
    expect(rows.length).toBe(BINDINGS.length * TEAMS.length * ENTERPRISES.length * INSTALLATIONS.length);
    for (const [b, f] of rows) {
      const v = hostMayAct(b, f);
      expect(v.ok, JSON.stringify([b, f])).toBe(oracle(b, f));
      if (!v.ok) {
        expect(["tenant_forbidden", "token_not_bound_to_team"]).toContain(tenantRefusalCode(v.reason));
        expect(tenantRefusalMessage(v.reason, f.teamId).length).toBeGreaterThan(20);
      }
    }
  });

  it("names the reason: another team, another org, an unknown org, several installations, uncounted installations", () => {
    const reasons: [HostBinding, TenantFacts, TenantRefusal][] = [
      [{ kind: "team", teamId: "TA" }, { teamId: "TB", enterpriseId: "E1", liveInstallations: 1 }, "other_team"],
      [{ kind: "enterprise", enterpriseId: "E1" }, { teamId: "TB", enterpriseId: "E2" }, "other_enterprise"],
      [{ kind: "enterprise", enterpriseId: "E1" }, { teamId: "TB", enterpriseId: null }, "other_enterprise"],
      [{ kind: "enterprise", enterpriseId: "E1" }, { teamId: "TB", liveInstallations: 1 }, "enterprise_unknown"],
      [{ kind: "unbound" }, { teamId: "TB", liveInstallations: 2 }, "unbound_multi_tenant"],
      [{ kind: "unbound" }, { teamId: "TB", enterpriseId: "E1" }, "installations_unknown"],
    ];
    for (const [b, f, reason] of reasons) expect(hostMayAct(b, f)).toEqual({ ok: false, reason });
    expect(tenantRefusalCode("unbound_multi_tenant")).toBe("token_not_bound_to_team");
    expect(tenantRefusalCode("other_team")).toBe("tenant_forbidden");
  });

  it("asks for the org only of an org binding, and for the installation count only of an unbound one", () => {
    expect(factsNeeded({ kind: "team", teamId: "TA" })).toEqual({ enterprise: false, installations: false });
    expect(factsNeeded({ kind: "enterprise", enterpriseId: "E1" })).toEqual({ enterprise: true, installations: false });
    expect(factsNeeded({ kind: "unbound" })).toEqual({ enterprise: false, installations: true });
  });
});

describe("bindingOfId", () => {
  it("reads T… as a team, E… as an org, none as unbound, and anything else as no binding", () => {
    expect(bindingOfId("T012AB")).toEqual({ kind: "team", teamId: "T012AB" });
    expect(bindingOfId("T_LOCAL")).toEqual({ kind: "team", teamId: "T_LOCAL" });
    expect(bindingOfId("E0ORG")).toEqual({ kind: "enterprise", enterpriseId: "E0ORG" });
    expect(bindingOfId(undefined)).toEqual({ kind: "unbound" });
    for (const bad of ["", "U123", "team-a", "t1", "T1/C1", "T1 ", `T${"x".repeat(64)}`])
      expect(bindingOfId(bad), bad).toBeUndefined();
  });
});

describe("tenant directories", () => {
  it("the default serves one installation and no org; a static one answers what it was given", async () => {
    const one = singleInstallation();
    expect(await one.liveInstallations()).toBe(1);
    expect(await one.enterpriseOf("T_LOCAL")).toBeNull();
    const grid = new StaticTenantDirectory(3, new Map([["TA", "E1"]]));
    expect(await grid.liveInstallations()).toBe(3);
    expect([await grid.enterpriseOf("TA"), await grid.enterpriseOf("TB")]).toEqual(["E1", null]);
  });
});

describe("unboundTokenFinding (start-up and doctor)", () => {
  it("is ok with every token bound or one installation; warns in development and is an error in production with several", () => {
    expect(unboundTokenFinding({ unboundTokens: 0, liveInstallations: 5, production: true }).level).toBe("ok");
    expect(unboundTokenFinding({ unboundTokens: 2, liveInstallations: 1, production: true }).level).toBe("ok");
    expect(unboundTokenFinding({ unboundTokens: 2, liveInstallations: 0, production: true }).level).toBe("ok");
    const dev = unboundTokenFinding({ unboundTokens: 1, liveInstallations: 2, production: false });
    expect(dev.level).toBe("warn");
    const prod = unboundTokenFinding({ unboundTokens: 1, liveInstallations: 2, production: true });
    expect(prod.level).toBe("error");
    expect(prod.message).toContain("production does not start");
    expect(prod.fix).toContain("<team_id>:<token>");
  });
});
