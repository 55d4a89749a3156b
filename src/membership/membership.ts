import type { Clock } from "../clock/clock.js";

/** The membership port: is `userId` currently a member of the channel? (Slack in production.) */
export interface MembershipSource {
  /** Throws when membership cannot be established; callers treat that as "no" (fail closed). */
  isMember(teamId: string, channelId: string, userId: string): Promise<boolean>;
}

/** Used when no membership source is configured: nobody can be verified, so nobody is a member. */
export const noMembership: MembershipSource = {
  isMember: async () => false,
};

/** Caches another source's answers for `ttlMs` (brief §3: "cached briefly"). Errors are not cached. */
export class CachedMembership implements MembershipSource {
  private readonly cache = new Map<string, { value: boolean; until: number }>();
  constructor(
    private readonly inner: MembershipSource,
    private readonly clock: Clock,
    private readonly ttlMs = 60_000,
  ) {}

  async isMember(teamId: string, channelId: string, userId: string): Promise<boolean> {
    const key = `${teamId}/${channelId}/${userId}`;
    const hit = this.cache.get(key);
    const now = this.clock.now();
    if (hit && hit.until > now) return hit.value;
    const value = await this.inner.isMember(teamId, channelId, userId);
    this.cache.set(key, { value, until: now + this.ttlMs });
    return value;
  }

  /** Forgets cached answers for a channel (e.g. after a member_left event). */
  invalidate(teamId: string, channelId: string): void {
    for (const k of this.cache.keys()) if (k.startsWith(`${teamId}/${channelId}/`)) this.cache.delete(k);
  }
}

/** A fixed membership table, for tests and the embedded library when the host knows the members. */
export class StaticMembership implements MembershipSource {
  constructor(private readonly members: Map<string, Set<string>> = new Map()) {}
  add(teamId: string, channelId: string, ...users: string[]): this {
    const key = `${teamId}/${channelId}`;
    let s = this.members.get(key);
    if (!s) this.members.set(key, (s = new Set()));
    for (const u of users) s.add(u);
    return this;
  }
  remove(teamId: string, channelId: string, userId: string): void {
    this.members.get(`${teamId}/${channelId}`)?.delete(userId);
  }
  async isMember(teamId: string, channelId: string, userId: string): Promise<boolean> {
    return this.members.get(`${teamId}/${channelId}`)?.has(userId) ?? false;
  }
}
