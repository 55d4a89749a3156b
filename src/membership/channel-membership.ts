import { LRUCache } from "lru-cache";
import type { Clock } from "../clock/clock.js";
import type { MembershipSource } from "./membership.js";

/** The roster port: every member of a channel, all pages read in one go (Slack in production). */
export interface ChannelRoster {
  /** Throws when the roster cannot be read in full; callers fail closed. */
  members(teamId: string, channelId: string): Promise<readonly string[]>;
}

/** Bounds of the roster cache. */
export interface ChannelMembershipLimits {
  /** How long a roster is trusted (ms) before the channel is read again. */
  readonly ttlMs: number;
  /** Channels whose roster is held at once (least recently used dropped first). */
  readonly maxChannels: number;
  /** Member ids held across every roster; a roster bigger than this alone is used once, not kept. */
  readonly maxMembers: number;
}

/** Defaults: a minute, 10,000 channels, 500,000 member ids (tens of MB at most). */
export const CHANNEL_MEMBERSHIP_DEFAULTS: ChannelMembershipLimits = {
  ttlMs: 60_000,
  maxChannels: 10_000,
  maxMembers: 500_000,
};

/**
 * Membership read per channel, not per (channel, user): one roster fetch per channel per `ttlMs`
 * answers every user asking about it, and concurrent misses share that one fetch. A failed fetch
 * is not cached and its error reaches every waiter (the caller fails closed).
 */
export class ChannelMembership implements MembershipSource {
  private readonly rosters: LRUCache<string, ReadonlySet<string>>;
  // One fetch per channel being read right now; an entry leaves when its fetch settles.
  private readonly inflight = new Map<string, Promise<ReadonlySet<string>>>();

  constructor(
    private readonly roster: ChannelRoster,
    clock: Clock,
    limits: Partial<ChannelMembershipLimits> = {},
  ) {
    const l = { ...CHANNEL_MEMBERSHIP_DEFAULTS, ...limits };
    this.rosters = new LRUCache({
      max: l.maxChannels,
      maxSize: l.maxMembers,
      sizeCalculation: (s) => Math.max(1, s.size),
      ttl: l.ttlMs,
      ttlResolution: 0,
      perf: { now: () => clock.now() },
    });
  }

  /** Rosters currently held (expired ones included until touched or swept). */
  get size(): number {
    return this.rosters.size;
  }

  /** Drops every expired roster; the app runs it periodically so idle channels do not linger. */
  sweep(): void {
    this.rosters.purgeStale();
  }

  async isMember(teamId: string, channelId: string, userId: string): Promise<boolean> {
    const key = `${teamId}/${channelId}`;
    const held = this.rosters.get(key);
    if (held) return held.has(userId);
    return (await this.fetch(key, teamId, channelId)).has(userId);
  }

  /** Forgets a channel's roster (a member joined or left); a fetch already running is not kept either. */
  invalidate(teamId: string, channelId: string): void {
    const key = `${teamId}/${channelId}`;
    this.rosters.delete(key);
    this.inflight.delete(key);
  }

  /** Forgets every roster (signals from other replicas may have been missed: each channel is read again). */
  clear(): void {
    this.rosters.clear();
    this.inflight.clear();
  }

  private fetch(key: string, teamId: string, channelId: string): Promise<ReadonlySet<string>> {
    const running = this.inflight.get(key);
    if (running) return running;
    const p = this.roster.members(teamId, channelId).then(
      (ids) => {
        const set: ReadonlySet<string> = new Set(ids);
        // Kept only if no invalidation came while it ran: a roster read before a leave must not outlive it.
        if (this.inflight.get(key) === p) {
          this.inflight.delete(key);
          this.rosters.set(key, set);
        }
        return set;
      },
      (err: unknown) => {
        if (this.inflight.get(key) === p) this.inflight.delete(key);
        throw err;
      },
    );
    this.inflight.set(key, p);
    return p;
  }
}
