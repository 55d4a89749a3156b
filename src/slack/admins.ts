import { LRUCache } from "lru-cache";
import type { Clock } from "../clock/clock.js";
import type { AdminEntry } from "../config/env.js";
import type { AdminCheck } from "../connections/grants-admin.js";
import { listedAdmin } from "../installations/admin-entries.js";
import type { SlackApis } from "./tenant-api.js";

/** Whether the deployment has at most one installation (bare SLAUDE_ADMINS ids count only then). */
export interface TenantCount {
  single(): Promise<boolean>;
}

/**
 * Who is an admin of slaude-connect in one team: listed in SLAUDE_ADMINS for that team, or a Slack
 * admin/owner of that team (users.info with that team's token). Slack's answers are kept `ttlMs`
 * per (team, user), at most `max` of them; a failed lookup is "no" and not kept.
 */
export class AdminDirectory implements AdminCheck {
  private readonly cache: LRUCache<string, { value: boolean }>;
  constructor(
    private readonly configured: readonly AdminEntry[],
    private readonly apis: SlackApis,
    private readonly tenants: TenantCount,
    clock: Clock,
    ttlMs = 5 * 60_000,
    max = 10_000,
  ) {
    this.cache = new LRUCache({ max, ttl: ttlMs, ttlResolution: 0, perf: { now: () => clock.now() } });
  }

  async isAdmin(teamId: string, userId: string): Promise<boolean> {
    if (listedAdmin(this.configured, teamId, userId, await this.tenants.single().catch(() => false))) return true;
    const key = `${teamId}/${userId}`;
    const hit = this.cache.get(key);
    if (hit) return hit.value;
    let value = false;
    try {
      value = await (await this.apis.forTeam(teamId)).isWorkspaceAdmin(userId);
    } catch {
      // Unknown is not admin (a team without an active installation too).
      return false;
    }
    this.cache.set(key, { value });
    return value;
  }
}
