import { describe, expect, it } from "vitest";
import { memoryLogger } from "../../src/log/logger.js";
import { refusalOf, TenantGuard } from "../../src/server/tenant-guard.js";
import type { TenantDirectory } from "../../src/tenancy/tenant-directory.js";

// The guard around hostMayAct: it asks the tenant directory only for the facts a binding needs, and
// a directory that fails refuses (503), never lets the request through.

/** A directory that counts what it is asked, and fails when told to. */
class CountingDirectory implements TenantDirectory {
  asked = { enterprise: 0, installations: 0 };
  constructor(
    private readonly installations: number,
    private readonly orgs: ReadonlyMap<string, string>,
    public failing = false,
  ) {}
  async enterpriseOf(teamId: string): Promise<string | null> {
    this.asked.enterprise++;
    if (this.failing) throw new Error("installations store unreachable");
    return this.orgs.get(teamId) ?? null;
  }
  async liveInstallations(): Promise<number> {
    this.asked.installations++;
    if (this.failing) throw new Error("installations store unreachable");
    return this.installations;
  }
}

describe("TenantGuard", () => {
  it("asks nothing for a team binding, the org for an org binding, the count for an unbound token", async () => {
    const dir = new CountingDirectory(2, new Map([["TA", "E1"]]));
    const guard = new TenantGuard(dir, memoryLogger());
    expect(await guard.check({ kind: "team", teamId: "TA" }, "TA")).toEqual({ ok: true });
    expect(await guard.check({ kind: "team", teamId: "TA" }, "TB")).toEqual({ ok: false, reason: "other_team" });
    expect(dir.asked).toEqual({ enterprise: 0, installations: 0 });
    expect(await guard.check({ kind: "enterprise", enterpriseId: "E1" }, "TA")).toEqual({ ok: true });
    expect(await guard.check({ kind: "enterprise", enterpriseId: "E1" }, "TB")).toEqual({
      ok: false,
      reason: "other_enterprise",
    });
    expect(dir.asked).toEqual({ enterprise: 2, installations: 0 });
    expect(await guard.check({ kind: "unbound" }, "TA")).toEqual({ ok: false, reason: "unbound_multi_tenant" });
    expect(dir.asked).toEqual({ enterprise: 2, installations: 1 });
  });

  it("refuses with directory_unavailable (503) when the directory fails, and logs it without a secret", async () => {
    const log = memoryLogger("debug");
    const guard = new TenantGuard(new CountingDirectory(1, new Map(), true), log);
    for (const b of [{ kind: "enterprise", enterpriseId: "E1" }, { kind: "unbound" }] as const) {
      const v = await guard.check(b, "TA");
      expect(v).toEqual({ ok: false, reason: "directory_unavailable" });
    }
    expect(refusalOf("directory_unavailable", "TA")).toMatchObject({
      status: 503,
      code: "tenant_directory_unavailable",
    });
    expect(refusalOf("other_team", "TB")).toMatchObject({ status: 403, code: "tenant_forbidden" });
    expect(refusalOf("unbound_multi_tenant", "TB")).toMatchObject({ status: 403, code: "token_not_bound_to_team" });
    expect(log.lines.some((l) => l.includes("tenant directory did not answer"))).toBe(true);
  });
});
