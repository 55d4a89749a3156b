import type { Clock } from "../clock/clock.js";
import type { SlackApi } from "./slack-api.js";

/** Who is an admin of slaude-connect: listed in SLAUDE_ADMINS, or a Slack workspace admin/owner. */
export class AdminDirectory {
  private readonly cache = new Map<string, { value: boolean; until: number }>();
  constructor(
    private readonly configured: readonly string[],
    private readonly api: SlackApi,
    private readonly clock: Clock,
    private readonly ttlMs = 5 * 60_000,
  ) {}

  async isAdmin(userId: string): Promise<boolean> {
    if (this.configured.includes(userId)) return true;
    const hit = this.cache.get(userId);
    const now = this.clock.now();
    if (hit && hit.until > now) return hit.value;
    let value = false;
    try {
      value = await this.api.isWorkspaceAdmin(userId);
    } catch {
      // Unknown is not admin.
      return false;
    }
    this.cache.set(userId, { value, until: now + this.ttlMs });
    return value;
  }
}
