// The guard's tenant facts from the installations, held briefly: an answer serves for HOLD_MS after
// it was fetched (the boundary included), never longer, and at most MAX_TEAMS teams are held.
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/clock/clock.js";
import { InstallationError } from "../../src/installations/errors.js";
import { HOLD_MS, InstallationTenantDirectory, MAX_TEAMS } from "../../src/installations/tenant-directory.js";
import type { Installation } from "../../src/store/installation-records.js";

/** An active team installation of `teamId` (what forTeam answers). */
function installation(teamId: string, enterpriseId: string | null): Installation {
  return {
    id: `inst-${teamId}`,
    enterpriseId,
    teamId,
    isEnterpriseInstall: false,
    appId: "A1",
    teamName: null,
    enterpriseName: null,
    botId: "B1",
    botUserId: "U1",
    scopes: [],
    status: "active",
    statusReason: null,
    sealed: null,
    tokenExpiresAt: null,
    installedBy: null,
    installedAt: 0,
    updatedAt: 0,
  };
}

/** A fake of the installations: the teams served (team id → enterprise id or null) and the lookups made. */
function fakeInstallations(served: Map<string, string | null>) {
  const lookups: string[] = [];
  return {
    lookups,
    forTeam: async (teamId: string): Promise<Installation> => {
      lookups.push(teamId);
      const enterpriseId = served.get(teamId);
      if (enterpriseId === undefined)
        throw new InstallationError("unknown_installation", `no installation serves ${teamId}`);
      return installation(teamId, enterpriseId);
    },
  };
}

describe("InstallationTenantDirectory", () => {
  it("reuses an answer for HOLD_MS after it was fetched, boundary included, then asks again", async () => {
    const clock = new ManualClock();
    const served = new Map<string, string | null>([["T1", "E1"]]);
    const inst = fakeInstallations(served);
    const dir = new InstallationTenantDirectory({ countLive: async () => 1 }, inst, clock);
    expect(await dir.serves("T1")).toBe(true);
    expect(await dir.enterpriseOf("T1")).toBe("E1");
    served.delete("T1"); // uninstalled: seen once the held answer is older than HOLD_MS
    clock.advance(HOLD_MS);
    expect(await dir.serves("T1")).toBe(true);
    expect(inst.lookups).toEqual(["T1"]);
    clock.advance(1);
    expect(await dir.serves("T1")).toBe(false);
    expect(await dir.enterpriseOf("T1")).toBe(null);
    expect(inst.lookups).toEqual(["T1", "T1"]);
  });

  it("holds a refusal as a fact, and lets any other failure through unheld", async () => {
    const clock = new ManualClock();
    let fail = true;
    const inst = {
      lookups: 0,
      forTeam: async (teamId: string): Promise<Installation> => {
        inst.lookups++;
        if (fail) throw new Error("database away");
        throw new InstallationError("installation_disabled", `${teamId} is disabled`);
      },
    };
    const dir = new InstallationTenantDirectory({ countLive: async () => 1 }, inst, clock);
    await expect(dir.serves("T1")).rejects.toThrow("database away");
    fail = false;
    expect(await dir.serves("T1")).toBe(false);
    expect(await dir.serves("T1")).toBe(false);
    expect(inst.lookups).toBe(2);
  });

  it("holds at most MAX_TEAMS teams, forgetting the oldest fetched first", async () => {
    const clock = new ManualClock();
    const served = new Map<string, string | null>();
    for (let i = 0; i <= MAX_TEAMS; i++) served.set(`T${i}`, null);
    const inst = fakeInstallations(served);
    const dir = new InstallationTenantDirectory({ countLive: async () => 1 }, inst, clock);
    for (let i = 0; i <= MAX_TEAMS; i++) expect(await dir.serves(`T${i}`)).toBe(true);
    expect(dir.heldTeams).toBe(MAX_TEAMS);
    expect(inst.lookups.length).toBe(MAX_TEAMS + 1);
    // T0 went; the newest is still held.
    await dir.serves(`T${MAX_TEAMS}`);
    expect(inst.lookups.length).toBe(MAX_TEAMS + 1);
    await dir.serves("T0");
    expect(inst.lookups.length).toBe(MAX_TEAMS + 2);
    expect(dir.heldTeams).toBe(MAX_TEAMS);
  });
});
