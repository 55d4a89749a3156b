import type { AuditEvent } from "../audit/event.js";
import type { Clock } from "../clock/clock.js";
import type { RowProof } from "../domain/row-proof.js";
import type { LimitRefusals } from "./limit-kind.js";
import { type BucketRate, type BucketState, fullAfterMs, refilled, takeToken } from "./token-bucket.js";

// The call rate per user and per team, checked at the start of each mcp_call. The buckets live in
// a RateBuckets port: in memory with SQLite (one process serves), in PostgreSQL with several
// replicas (one shared bucket per key, one statement per call).

/** The configured rates (SLAUDE_CALL_RATE_PER_USER, SLAUDE_CALL_RATE_PER_TEAM). */
export interface CallRateLimits {
  readonly perUser: BucketRate;
  readonly perTeam: BucketRate;
}

/** One bucket to take a token from. */
export interface BucketTake {
  readonly key: string;
  readonly rate: BucketRate;
}

/**
 * The result of taking in order: all granted, or the index of the first refusal and when to retry;
 * or, for a take made with row proofs (PostgreSQL), `unproved`: a proof failed, nothing was taken.
 */
export type TakeResult =
  | { readonly granted: true }
  | { readonly granted: false; readonly refused: number; readonly retryAt: number }
  | { readonly granted: false; readonly unproved: true };

/**
 * Where buckets live. `take` takes one token from each bucket in order and stops at the first
 * refusal: the buckets after it are not touched (a user over their own rate does not drain their team's).
 */
export interface RateBuckets {
  take(takes: readonly BucketTake[], now: number): Promise<TakeResult>;
  /**
   * `take`, and when every take is granted, `rows` appended in the same atomic step: granted means
   * committed, and a refusal (or a failure) writes no row and spends nothing. Buckets in another
   * process than the caller (PostgreSQL) offer it, so a call's rate and its write-ahead row cost one
   * round trip instead of two in a row.
   */
  takeAndAppend?(
    takes: readonly BucketTake[],
    now: number,
    rows: readonly AuditEvent[],
    proofs?: readonly RowProof[],
  ): Promise<TakeResult>;
}

/** The default bound on in-memory buckets: one per active user and team. */
export const MEMORY_BUCKETS_MAX = 100_000;

/**
 * Buckets in process memory, at most `maxKeys`. A bucket that has refilled completely equals an
 * absent one, so when the map is full the least recently used bucket is dropped if it is full;
 * if even that one is still refilling, the new key is refused until it is (fail closed: forgetting
 * a refilling bucket would hand its owner tokens).
 */
export class MemoryRateBuckets implements RateBuckets {
  private readonly buckets = new Map<string, { state: BucketState; rate: BucketRate }>();

  constructor(private readonly maxKeys: number = MEMORY_BUCKETS_MAX) {}

  /**
   * Takes in order, stopping at the first refusal (see RateBuckets). A bucket created by a take that
   * is then refused further on is not kept (forgetting it only gives back its one token): new keys
   * are created no faster than the team's own rate allows, so made-up user ids cannot fill the map.
   */
  async take(takes: readonly BucketTake[], now: number): Promise<TakeResult> {
    const created: string[] = [];
    const refuse = (refused: number, retryAt: number): TakeResult => {
      for (const k of created) this.buckets.delete(k);
      return { granted: false, refused, retryAt };
    };
    for (const [i, t] of takes.entries()) {
      const prev = this.buckets.get(t.key);
      if (!prev) {
        const room = this.makeRoom(now);
        if (room !== true) return refuse(i, room);
      }
      const d = takeToken(prev?.state, t.rate, now);
      // Re-inserted: the map's order is least recently used first.
      this.buckets.delete(t.key);
      this.buckets.set(t.key, { state: d.state, rate: t.rate });
      if (!prev) created.push(t.key);
      if (!d.granted) return refuse(i, d.retryAt);
    }
    return { granted: true };
  }

  /** Buckets held now. */
  get size(): number {
    return this.buckets.size;
  }

  /** True when a new key fits; else when the oldest bucket will be full (and can go). */
  private makeRoom(now: number): true | number {
    if (this.buckets.size < this.maxKeys) return true;
    const [key, oldest] = this.buckets.entries().next().value as [string, { state: BucketState; rate: BucketRate }];
    if (refilled(oldest.state, oldest.rate, now) >= oldest.rate.burst) {
      this.buckets.delete(key);
      return true;
    }
    return oldest.state.updatedAt + fullAfterMs(oldest.rate);
  }
}

/** The verdict on one call: it may start, or which rate it is over and when a retry can succeed. */
export type CallRateVerdict =
  | { readonly ok: true }
  | { readonly ok: false; readonly limit: "call_rate_user" | "call_rate_team"; readonly retryAt: number };

/** How many tenants were refused recently, remembered at most for this many keys. */
const RECENT_MAX = 10_000;

/** The call-rate check of mcp_call: the caller's bucket, then their team's. */
export class CallRateGate {
  /** Keys refused, with the time their retry can succeed: what the at-limit gauge counts. */
  private readonly recent = new Map<string, number>();

  constructor(
    private readonly d: {
      readonly buckets: RateBuckets;
      readonly limits: CallRateLimits;
      readonly clock: Clock;
      readonly refused?: LimitRefusals;
    },
  ) {}

  /** True when the buckets live in this process (no round trip): the check costs nothing to wait for. */
  get local(): boolean {
    return this.d.buckets instanceof MemoryRateBuckets;
  }

  /** True when the buckets can take a call's tokens and commit its write-ahead row in one step (`checkAndAppend`). */
  get appendsWithTake(): boolean {
    return this.d.buckets.takeAndAppend !== undefined;
  }

  /** Takes a token for `userId` in `teamId` and one for the team. */
  async check(teamId: string, userId: string): Promise<CallRateVerdict> {
    return proved(await this.verdict(teamId, userId, (takes, now) => this.d.buckets.take(takes, now)));
  }

  /**
   * `check`, with `rows` committed exactly when the verdict is ok, in the same step (see
   * RateBuckets.takeAndAppend; only when `appendsWithTake`). A failure leaves neither done.
   */
  async checkAndAppend(teamId: string, userId: string, rows: readonly AuditEvent[]): Promise<CallRateVerdict> {
    return proved(await this.checkAndAppendProved(teamId, userId, rows, []));
  }

  /**
   * `checkAndAppend`, done only if every proof holds in the same step (row-proof.ts): `unproved`
   * when one does not, and then nothing was taken or written.
   */
  checkAndAppendProved(
    teamId: string,
    userId: string,
    rows: readonly AuditEvent[],
    proofs: readonly RowProof[],
  ): Promise<CallRateVerdict | "unproved"> {
    const both = this.d.buckets.takeAndAppend;
    if (!both) throw new Error("these rate buckets do not append rows");
    return this.verdict(teamId, userId, (takes, now) => both.call(this.d.buckets, takes, now, rows, proofs));
  }

  private async verdict(
    teamId: string,
    userId: string,
    take: (takes: readonly BucketTake[], now: number) => Promise<TakeResult>,
  ): Promise<CallRateVerdict | "unproved"> {
    const now = this.d.clock.now();
    const takes: BucketTake[] = [
      { key: userKey(teamId, userId), rate: this.d.limits.perUser },
      { key: teamKey(teamId), rate: this.d.limits.perTeam },
    ];
    const r = await take(takes, now);
    if (r.granted) return { ok: true };
    if ("unproved" in r) return "unproved";
    const limit = r.refused === 0 ? "call_rate_user" : "call_rate_team";
    this.d.refused?.(limit);
    this.remember(takes[r.refused]!.key, r.retryAt);
    return { ok: false, limit, retryAt: r.retryAt };
  }

  /**
   * True while `userId` or `teamId` is over its rate as far as this replica has seen (a refusal whose
   * retry time is still ahead). The call path then reads nothing ahead and waits for the verdict
   * before reading anything else: a caller hammering past their limit costs the database one
   * statement per call, not the six a call that runs sends before its vendor.
   */
  refusedRecently(teamId: string, userId: string): boolean {
    const now = this.d.clock.now();
    const ahead = (key: string): boolean => (this.recent.get(key) ?? 0) > now;
    return ahead(userKey(teamId, userId)) || ahead(teamKey(teamId));
  }

  /** Users and teams over their call rate right now, as far as this replica has seen (the gauge). */
  atLimit(): { readonly users: number; readonly teams: number } {
    const now = this.d.clock.now();
    let users = 0;
    let teams = 0;
    for (const [key, until] of this.recent) {
      if (until <= now) this.recent.delete(key);
      else if (key.startsWith("t:")) teams++;
      else users++;
    }
    return { users, teams };
  }

  /** The same, under the names of the `limit` metric label. */
  atLimitCounts(): { readonly call_rate_user: number; readonly call_rate_team: number } {
    const { users, teams } = this.atLimit();
    return { call_rate_user: users, call_rate_team: teams };
  }

  private remember(key: string, retryAt: number): void {
    this.recent.delete(key);
    if (this.recent.size >= RECENT_MAX) this.recent.delete(this.recent.keys().next().value as string);
    this.recent.set(key, retryAt);
  }
}

/** A verdict of a take made without proofs: never `unproved` (that would be a bug of the buckets). */
function proved(v: CallRateVerdict | "unproved"): CallRateVerdict {
  if (v === "unproved") throw new Error("a take without proofs came back unproved");
  return v;
}

/** The bucket key of a user in a team (ids are Slack ids: no ':' inside). */
export function userKey(teamId: string, userId: string): string {
  return `u:${teamId}:${userId}`;
}

/** The bucket key of a team. */
export function teamKey(teamId: string): string {
  return `t:${teamId}`;
}
