import { LRUCache } from "lru-cache";
import type { Clock } from "../clock/clock.js";
import type { InstallationHealth, InstallationRepo } from "../store/installation-records.js";
import type { TenantDirectory } from "../tenancy/tenant-directory.js";
import { InstallationError } from "./errors.js";
import type { Installations } from "./installations.js";

// The host-token guard's tenant facts from the installations store, cached briefly: the guard asks
// on host requests, and an installation changes rarely. A change is seen within HOLD_MS on every
// replica (an uninstall also ends the tenant's Slack calls at once: those read the row each time).

/** How long an answer is reused. */
const HOLD_MS = 2_000;
/** Teams whose answer is held at once. */
const MAX_TEAMS = 10_000;

/** TenantDirectory over the installations. */
export class InstallationTenantDirectory implements TenantDirectory {
  private readonly teams: LRUCache<string, { installed: boolean; enterpriseId: string | null }>;
  private live: { n: number; at: number } | undefined;

  constructor(
    private readonly repo: Pick<InstallationRepo, "countLive">,
    private readonly installations: Pick<Installations, "forTeam">,
    private readonly clock: Clock,
  ) {
    this.teams = new LRUCache({ max: MAX_TEAMS, ttl: HOLD_MS, ttlResolution: 0, perf: { now: () => clock.now() } });
  }

  async enterpriseOf(teamId: string): Promise<string | null> {
    return (await this.team(teamId)).enterpriseId;
  }

  async serves(teamId: string): Promise<boolean> {
    return (await this.team(teamId)).installed;
  }

  async liveInstallations(): Promise<number> {
    const now = this.clock.now();
    if (this.live && now - this.live.at < HOLD_MS) return this.live.n;
    this.live = { n: await this.repo.countLive(), at: now };
    return this.live.n;
  }

  private async team(teamId: string): Promise<{ installed: boolean; enterpriseId: string | null }> {
    const held = this.teams.get(teamId);
    if (held) return held;
    let answer: { installed: boolean; enterpriseId: string | null };
    try {
      const inst = await this.installations.forTeam(teamId);
      answer = { installed: true, enterpriseId: inst.enterpriseId };
    } catch (err) {
      // Refused tenants (never installed, disabled, uninstalled) are facts; anything else is a failure to say.
      if (!(err instanceof InstallationError)) throw err;
      answer = { installed: false, enterpriseId: null };
    }
    this.teams.set(teamId, answer);
    return answer;
  }
}

/** The installations' health for /readyz: active count, and each disabled one with its reason (at most 100 listed). */
export async function installationHealth(repo: Pick<InstallationRepo, "list">): Promise<InstallationHealth> {
  const rows = await repo.list(10_000);
  const disabled = rows.filter((i) => i.status === "disabled");
  return {
    active: rows.filter((i) => i.status === "active").length,
    disabled: disabled
      .slice(0, 100)
      .map((i) => ({ id: i.id, tenant: i.teamId ?? i.enterpriseId ?? "", reason: i.statusReason ?? "operator" })),
  };
}
