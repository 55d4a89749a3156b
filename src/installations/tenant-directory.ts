import type { Clock } from "../clock/clock.js";
import type { InstallationHealth, InstallationRepo } from "../store/installation-records.js";
import type { TenantDirectory } from "../tenancy/tenant-directory.js";
import { InstallationError } from "./errors.js";
import type { Installations } from "./installations.js";

// The host-token guard's tenant facts from the installations store, cached briefly: the guard asks
// on host requests, and an installation changes rarely. A change is seen within HOLD_MS on every
// replica (an uninstall also ends the tenant's Slack calls at once: those read the row each time).

/** How long an answer is reused: an answer fetched at t serves until t + HOLD_MS included. */
export const HOLD_MS = 2_000;
/** Teams whose answer is held at once. */
export const MAX_TEAMS = 10_000;

/** What the guard needs to know of a team's installation. */
interface TeamFacts {
  readonly installed: boolean;
  readonly enterpriseId: string | null;
}

/** TenantDirectory over the installations. */
export class InstallationTenantDirectory implements TenantDirectory {
  /**
   * Answers by team with when each was fetched, in fetch order (oldest first): a held answer is one
   * clock read and a Map lookup. At the cap the oldest fetch goes; every answer is refetched within
   * HOLD_MS of its use anyway, so fetch order is use order to within that.
   */
  private readonly teams = new Map<string, { readonly facts: TeamFacts; readonly at: number }>();
  private live: { n: number; at: number } | undefined;

  constructor(
    private readonly repo: Pick<InstallationRepo, "countLive">,
    private readonly installations: Pick<Installations, "forTeam">,
    private readonly clock: Clock,
  ) {}

  /** How many teams' answers are held now (at most MAX_TEAMS). */
  get heldTeams(): number {
    return this.teams.size;
  }

  enterpriseOf(teamId: string): Promise<string | null> {
    const held = this.held(teamId);
    return held ? Promise.resolve(held.enterpriseId) : this.fetch(teamId).then((t) => t.enterpriseId);
  }

  serves(teamId: string): Promise<boolean> {
    const held = this.held(teamId);
    return held ? Promise.resolve(held.installed) : this.fetch(teamId).then((t) => t.installed);
  }

  async liveInstallations(): Promise<number> {
    const now = this.clock.now();
    if (this.live && now - this.live.at < HOLD_MS) return this.live.n;
    this.live = { n: await this.repo.countLive(), at: now };
    return this.live.n;
  }

  /** The held answer for `teamId` while it is at most HOLD_MS old; an older one is forgotten. */
  private held(teamId: string): TeamFacts | undefined {
    const h = this.teams.get(teamId);
    if (!h) return undefined;
    if (this.clock.now() - h.at <= HOLD_MS) return h.facts;
    this.teams.delete(teamId);
    return undefined;
  }

  private async fetch(teamId: string): Promise<TeamFacts> {
    let answer: TeamFacts;
    try {
      const inst = await this.installations.forTeam(teamId);
      answer = { installed: true, enterpriseId: inst.enterpriseId };
    } catch (err) {
      // Refused tenants (never installed, disabled, uninstalled) are facts; anything else is a failure to say.
      if (!(err instanceof InstallationError)) throw err;
      answer = { installed: false, enterpriseId: null };
    }
    // Stamped when the answer arrived; a refetch moves the team to the newest end.
    this.teams.delete(teamId);
    if (this.teams.size >= MAX_TEAMS) this.teams.delete(this.teams.keys().next().value as string);
    this.teams.set(teamId, { facts: answer, at: this.clock.now() });
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
