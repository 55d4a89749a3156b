import { LRUCache } from "lru-cache";
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

/**
 * Caches another source's answers for `ttlMs` (brief §3: "cached briefly"), at most `max` of them
 * (least recently used dropped first; expired ones are never served). Errors are not cached.
 */
export class CachedMembership implements MembershipSource {
  private readonly cache: LRUCache<string, { value: boolean }>;
  constructor(
    private readonly inner: MembershipSource,
    clock: Clock,
    ttlMs = 60_000,
    max = 10_000,
  ) {
    this.cache = new LRUCache({ max, ttl: ttlMs, ttlResolution: 0, perf: { now: () => clock.now() } });
  }

  /** Answers currently held (expired ones included until touched or swept). */
  get size(): number {
    return this.cache.size;
  }

  /** Drops every expired answer; the app runs it periodically so idle channels do not linger. */
  sweep(): void {
    this.cache.purgeStale();
  }

  async isMember(teamId: string, channelId: string, userId: string): Promise<boolean> {
    const key = `${teamId}/${channelId}/${userId}`;
    const hit = this.cache.get(key);
    if (hit) return hit.value;
    const value = await this.inner.isMember(teamId, channelId, userId);
    this.cache.set(key, { value });
    return value;
  }

  /** Forgets cached answers for a channel (e.g. after a member_left event). */
  invalidate(teamId: string, channelId: string): void {
    for (const k of [...this.cache.keys()]) if (k.startsWith(`${teamId}/${channelId}/`)) this.cache.delete(k);
  }

  /** Forgets every cached answer (signals from other replicas may have been missed). */
  clear(): void {
    this.cache.clear();
  }
}

/** A fixed membership table, for tests and the embedded library when the host knows the members. */
export class StaticMembership implements MembershipSource {
  constructor(private readonly members: Map<string, Set<string>> = new Map()) {}
  add(teamId: string, channelId: string, ...users: string[]): this {
    const key = `${teamId}/${channelId}`;
    let s = this.members.get(key);
    if (!s) {
      s = new Set();
      this.members.set(key, s);
    }
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
