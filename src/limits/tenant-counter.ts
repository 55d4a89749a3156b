// A per-tenant counting cap (live children, login flows, MCP sessions, event streams): how many
// each team holds now, against one cap per team.
//
// Bounded by construction: a team is a key only while it holds at least one thing, and every
// thing it holds is also under a per-deployment cap, so the map never has more keys than the
// deployment has live things. No eviction is ever needed, and none happens: forgetting a team's
// count would let it past its cap (fail open).

/** Live things per team under a cap per team. */
export class TenantCounter {
  private readonly counts = new Map<string, number>();

  /** `capPerTeam`: the most one team may hold at once (at least 1). */
  constructor(readonly capPerTeam: number) {
    if (!Number.isInteger(capPerTeam) || capPerTeam < 1)
      throw new RangeError(`a per-team cap must be a positive integer, not ${capPerTeam}`);
  }

  /** How many `teamId` holds now. */
  of(teamId: string): number {
    return this.counts.get(teamId) ?? 0;
  }

  /** Whether `teamId` already holds its cap (its next one is refused). */
  atCap(teamId: string): boolean {
    return this.of(teamId) >= this.capPerTeam;
  }

  /** Counts one more for `teamId` if under its cap; false (nothing counted) when at it. */
  tryAcquire(teamId: string): boolean {
    if (this.atCap(teamId)) return false;
    this.counts.set(teamId, this.of(teamId) + 1);
    return true;
  }

  /** Gives one back (never below zero); a team at zero is forgotten. */
  release(teamId: string): void {
    const n = this.of(teamId) - 1;
    if (n > 0) this.counts.set(teamId, n);
    else this.counts.delete(teamId);
  }

  /** Teams holding their whole cap right now (the `slaude_tenants_at_limit` gauge). */
  teamsAtCap(): number {
    let n = 0;
    for (const c of this.counts.values()) if (c >= this.capPerTeam) n++;
    return n;
  }

  /** Teams holding anything (bounded by the deployment's own cap). */
  get size(): number {
    return this.counts.size;
  }
}
