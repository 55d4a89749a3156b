import { LRUCache } from "lru-cache";
import type { Clock } from "../clock/clock.js";
import type { AdminCheck } from "../connections/grants-admin.js";
import type { SlackApi } from "./slack-api.js";

/**
 * Who is an admin of slaude-connect: listed in SLAUDE_ADMINS, or a Slack workspace admin/owner.
 * Slack's answers are kept `ttlMs`, at most `max` of them; a failed lookup is "no" and not kept.
 */
export class AdminDirectory implements AdminCheck {
  private readonly cache: LRUCache<string, { value: boolean }>;
  constructor(
    private readonly configured: readonly string[],
    private readonly api: SlackApi,
    clock: Clock,
    ttlMs = 5 * 60_000,
    max = 10_000,
  ) {
    this.cache = new LRUCache({ max, ttl: ttlMs, ttlResolution: 0, perf: { now: () => clock.now() } });
  }

  async isAdmin(userId: string): Promise<boolean> {
    if (this.configured.includes(userId)) return true;
    const hit = this.cache.get(userId);
    if (hit) return hit.value;
    let value = false;
    try {
      value = await this.api.isWorkspaceAdmin(userId);
    } catch {
      // Unknown is not admin.
      return false;
    }
    this.cache.set(userId, { value });
    return value;
  }
}
