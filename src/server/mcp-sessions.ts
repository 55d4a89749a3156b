import type http from "node:http";
import type { McpServer, WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
import type { Clock } from "../clock/clock.js";
import type { ThreadRef } from "../domain/thread.js";
import type { Logger } from "../log/logger.js";

/** How many MCP sessions may be open at once, and how long one may sit unused before it is closed. */
export interface SessionLimits {
  /** Transports this process holds. */
  readonly maxSessions: number;
  /** Live session records of the deployment, when records are shared (PostgreSQL); default DEFAULT_MAX_LIVE_SESSIONS. */
  readonly maxLiveSessions?: number;
  /** Sessions one team may hold (SLAUDE_MCP_MAX_SESSIONS_PER_TEAM): here, and across the deployment with shared records; unset: no per-team cap. */
  readonly maxSessionsPerTeam?: number;
  readonly idleMs: number;
}

/** Defaults of SLAUDE_MCP_MAX_SESSIONS and SLAUDE_MCP_SESSION_IDLE_SECONDS. */
export const DEFAULT_SESSION_LIMITS: SessionLimits = { maxSessions: 1_000, idleMs: 30 * 60_000 };

/** Default of SLAUDE_MCP_MAX_LIVE_SESSIONS. */
export const DEFAULT_MAX_LIVE_SESSIONS = 10_000;

/** How often the idle sweep runs: a quarter of the idle time, between 1 s and a minute. */
export function sweepEveryMs(limits: SessionLimits): number {
  return Math.max(1_000, Math.min(60_000, limits.idleMs / 4));
}

/** How often a session's last use is written to shared records: a tenth of the idle time. */
export function touchEveryMs(limits: SessionLimits): number {
  return Math.floor(limits.idleMs / 10);
}

/** One open Streamable HTTP session, bound to the thread it was opened for. */
export interface McpSession {
  readonly id: string;
  readonly transport: WebStandardStreamableHTTPServerTransport;
  readonly server: McpServer;
  readonly thread: ThreadRef;
  /** The X-Slaude-Thread value the session was opened with: later requests compare it, never re-parse it. */
  readonly threadHeader: string;
  /** The digest of the host token that opened the session (see SessionRecord.tokenDigest). */
  readonly tokenDigest: string;
  /** Requests (and SSE streams) of this session still being answered: a busy session is never evicted or expired. */
  busy: number;
  closed: boolean;
}

/** A session held in the table, when it was last used (on the injected clock) and the rank of that use. */
interface Held {
  readonly s: McpSession;
  usedAt: number;
  /** Increases with every use of any session: the recency order, exact even within one millisecond. */
  seq: number;
}

/**
 * The open sessions, bounded twice: at most `maxSessions` (a new one evicts the least recently used
 * idle session, or is refused when every session is busy) and closed after `idleMs` without a request.
 * A Map by id with each session's last use and its rank: a lookup reads the clock once, a use writes
 * two fields (nothing is moved); the least recently used is found by rank when room is needed.
 */
export class SessionTable {
  private readonly held = new Map<string, Held>();
  private seq = 0;
  /** Initializes in flight: they count against the cap before their session id exists. */
  private opening = 0;
  /** The same, per team: concurrent initializes of one team cannot all pass its cap. */
  private readonly openingByTeam = new Map<string, number>();

  constructor(
    readonly limits: SessionLimits,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Open sessions (stale ones not yet swept included). */
  get size(): number {
    return this.held.size;
  }

  /**
   * Makes room for one new session: true when there is room (evicting the least recently used
   * idle session if needed), false when every open session is busy (the caller refuses).
   */
  reserve(teamId?: string): boolean {
    if (teamId !== undefined) this.openingByTeam.set(teamId, (this.openingByTeam.get(teamId) ?? 0) + 1);
    this.sweepIdle();
    if (this.held.size + this.opening < this.limits.maxSessions) {
      this.opening++;
      return true;
    }
    let idle: Held | undefined;
    for (const h of this.held.values()) if (h.s.busy === 0 && (idle === undefined || h.seq < idle.seq)) idle = h;
    if (idle !== undefined) {
      this.drop(idle.s.id, idle.s);
      this.log.info("mcp session evicted: the session cap is reached", { maxSessions: this.limits.maxSessions });
      this.opening++;
      return true;
    }
    if (teamId !== undefined) this.releaseTeam(teamId);
    return false;
  }

  /** Ends a reservation made by `reserve` (the session was added, or its initialize failed). */
  release(teamId?: string): void {
    this.opening = Math.max(0, this.opening - 1);
    if (teamId !== undefined) this.releaseTeam(teamId);
  }

  /**
   * Room for one more session of `teamId` under its per-team cap, made (if needed) by closing the
   * team's own least recently used idle session, never another team's; false when every session
   * of the team is busy. Call just before `reserve(teamId)`, with no await between.
   */
  roomForTeam(teamId: string): boolean {
    const cap = this.limits.maxSessionsPerTeam;
    if (cap === undefined) return true;
    let held = this.openingByTeam.get(teamId) ?? 0;
    let idle: Held | undefined;
    for (const h of this.held.values()) {
      if (h.s.thread.teamId !== teamId) continue;
      held++;
      if (h.s.busy === 0 && (idle === undefined || h.seq < idle.seq)) idle = h;
    }
    if (held < cap) return true;
    if (idle === undefined) return false;
    this.drop(idle.s.id, idle.s);
    this.log.info("mcp session evicted: the team's session cap is reached", { teamId, maxSessionsPerTeam: cap });
    return true;
  }

  /** Teams holding their whole per-team share of sessions here (the tenants-at-limit gauge). */
  teamsAtCap(): number {
    const cap = this.limits.maxSessionsPerTeam;
    if (cap === undefined) return 0;
    const held = new Map<string, number>();
    for (const { s } of this.held.values()) held.set(s.thread.teamId, (held.get(s.thread.teamId) ?? 0) + 1);
    let n = 0;
    for (const c of held.values()) if (c >= cap) n++;
    return n;
  }

  private releaseTeam(teamId: string): void {
    const n = (this.openingByTeam.get(teamId) ?? 1) - 1;
    if (n > 0) this.openingByTeam.set(teamId, n);
    else this.openingByTeam.delete(teamId);
  }

  /**
   * Records an initialized session as the most recently used. Never more than `maxSessions`: past
   * the cap the least recently used session is closed (reserve has made room, so this is a backstop).
   */
  add(id: string, s: McpSession): void {
    // Replacing the entry of an id with another session forgets the old one without closing it.
    this.held.set(id, { s, usedAt: this.clock.now(), seq: ++this.seq });
    if (this.held.size > this.limits.maxSessions) {
      const [oldId, oldest] = this.byRecency()[this.held.size - 1]!;
      this.drop(oldId, oldest.s);
    }
  }

  /** The live session `id`, or undefined when unknown or expired (an expired idle one is closed now). */
  get(id: string): McpSession | undefined {
    const h = this.held.get(id);
    if (!h) return undefined;
    if (h.s.busy === 0 && this.clock.now() - h.usedAt >= this.limits.idleMs) {
      this.drop(id, h.s);
      return undefined;
    }
    return h.s;
  }

  /**
   * Records a request on `s`: its idle clock restarts now and when `res` ends. A `busy` request
   * (a POST: a call may be running) pins the session until then; a standing GET stream does not,
   * since a client holding only that stream is not doing anything.
   */
  track(id: string, s: McpSession, res: http.ServerResponse, busy: boolean): void {
    if (busy) s.busy++;
    this.touch(id, s);
    res.once("close", () => {
      if (busy) s.busy--;
      this.touch(id, s);
    });
  }

  /** Sessions with a request being answered (a POST still open). */
  get busyCount(): number {
    let n = 0;
    for (const { s } of this.held.values()) if (s.busy > 0) n++;
    return n;
  }

  /** Ids of every session held here, the most recently used first. */
  ids(): string[] {
    return this.byRecency().map(([id]) => id);
  }

  /** Ids of the sessions with a request being answered (their shared records are kept fresh by the sweep). */
  busyIds(): string[] {
    return this.byRecency()
      .filter(([, h]) => h.s.busy > 0)
      .map(([id]) => id);
  }

  /** Every entry, the most recently used first. */
  private byRecency(): [string, Held][] {
    return [...this.held].sort((a, b) => b[1].seq - a[1].seq);
  }

  /** Forgets `s` (its transport closed on its own, e.g. a client DELETE). */
  remove(id: string, s: McpSession): void {
    s.closed = true;
    if (this.held.get(id)?.s === s) this.held.delete(id);
  }

  /** Closes every session idle for `idleMs` or more; returns how many were closed. */
  sweepIdle(): number {
    // A busy session is in use however long its request (or SSE stream) has been open: marked used
    // most recently used first, so the busy ones keep their order among themselves (reversed, as before).
    for (const [id, { s }] of this.byRecency()) if (s.busy > 0) this.touch(id, s);
    const now = this.clock.now();
    let expired = 0;
    for (const [id, h] of this.byRecency().reverse()) {
      if (h.s.busy === 0 && now - h.usedAt >= this.limits.idleMs) {
        this.drop(id, h.s);
        expired++;
      }
    }
    if (expired) this.log.info("idle mcp sessions closed", { count: expired, idleMs: this.limits.idleMs });
    return expired;
  }

  /** Closes every session (shutdown). */
  async closeAll(): Promise<void> {
    const all = [...this.held.values()].map((h) => h.s);
    for (const s of all) s.closed = true;
    this.held.clear();
    await Promise.all(all.map((s) => s.server.close().catch(() => {})));
  }

  private touch(id: string, s: McpSession): void {
    if (s.closed) return;
    const h = this.held.get(id);
    if (h?.s !== s) return;
    h.usedAt = this.clock.now();
    h.seq = ++this.seq;
  }

  /** Removes `id` and then closes its session (closing re-enters `remove`, which finds the entry gone). */
  private drop(id: string, s: McpSession): void {
    this.held.delete(id);
    if (s.closed) return;
    s.closed = true;
    void s.server.close().catch(() => {});
  }
}
