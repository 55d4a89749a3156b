import { LRUCache } from "lru-cache";
import { z } from "zod";
import type { RowProof } from "../domain/row-proof.js";

// What an MCP session IS, apart from the transport object that serves it: the thread it was
// opened for and the initialize that opened it. With PostgreSQL every replica reads these records,
// so a session opened on one replica can be rebuilt and served by any other (docs/scaling.md).

/**
 * The initialize parameters a session was opened with, replayed to rebuild it on another replica.
 * The named fields are checked; the rest passes through untouched, since the replay must give the
 * server exactly what the client sent (the SDK validates it again when it is replayed).
 */
export const InitializeParamsSchema = z
  .object({
    protocolVersion: z.string().min(1).max(64),
    capabilities: z.record(z.string(), z.unknown()),
    clientInfo: z.object({ name: z.string().max(256), version: z.string().max(256) }).loose(),
  })
  .loose();

/** The largest stored initialize (client info and capabilities, as JSON); a bigger one is refused when the session opens. */
export const MAX_INITIALIZE_JSON = 64 * 1024;

/** The initialize parameters as stored (validated when read back, never trusted as typed). */
export type InitializeParams = z.infer<typeof InitializeParamsSchema>;

/**
 * One MCP session as every replica sees it. No secrets: the host token is checked per request, and
 * only a keyed digest of the token that opened the session is kept (src/server/session-token.ts).
 */
export interface SessionRecord {
  readonly id: string;
  readonly teamId: string;
  /** `<key id>:<HMAC>` of the host token that opened the session: every later request must present the same token. Undefined only on records written before the digest existed (refused). */
  readonly tokenDigest: string | undefined;
  /** The X-Slaude-Thread value exactly as the session was opened with: later requests must send the very same. */
  readonly threadHeader: string;
  /** The protocol version negotiated at initialize. */
  readonly protocolVersion: string;
  /** The client's initialize parameters (client info, capabilities, requested version). */
  readonly initialize: InitializeParams;
  readonly createdAt: number;
  readonly lastSeenAt: number;
  /** Set once the session ended (DELETE, idle expiry): an ended session is refused everywhere. */
  readonly endedAt: number | undefined;
}

/** Whether `r` names a session that may still be served. */
export function isLive(r: SessionRecord | undefined): r is SessionRecord {
  return r !== undefined && r.endedAt === undefined;
}

/** The cap on live records and the last use before which a live session counts as idle (may be ended for a new one). */
export interface SessionRoom {
  readonly max: number;
  readonly idleBefore: number;
  /** Live records one team may hold (its own idle ones are ended to make room, never another team's). */
  readonly maxPerTeam?: number;
}

/**
 * The session records port. `shared` says whether other processes read the same records: when
 * false (SQLite, one process) a session lives exactly as long as its local transport.
 */
export interface SessionRecords {
  readonly shared: boolean;
  /**
   * Records a newly initialized session. When `room.max` sessions are live already, the least recently
   * seen ones last seen before `room.idleBefore` are ended to make room; when too few are that idle,
   * nothing is recorded (`opened` false). `ended`: how many were ended for it.
   */
  open(
    r: Omit<SessionRecord, "endedAt" | "lastSeenAt">,
    room: SessionRoom,
  ): Promise<{ opened: boolean; ended: number; teamFull?: boolean }>;
  /** The record `id`, ended or not; undefined when unknown (never opened, or purged after it ended). */
  get(id: string): Promise<SessionRecord | undefined>;
  /** `get`, with the proof of the live record from the same read (shared records: row-proof.ts). */
  getProved?(id: string): Promise<{ readonly record: SessionRecord | undefined; readonly proof: RowProof }>;
  /** Moves a live session's last use to `now` (callers throttle: see SessionRecords users). */
  touch(id: string, now: number): Promise<void>;
  /** Ends a live session at `now`; ending an ended or unknown one does nothing. */
  end(id: string, now: number): Promise<void>;
  /** Which of `ids` are no longer live (ended or unknown): what the idle sweep closes here. */
  notLive(ids: readonly string[]): Promise<string[]>;
  /** Ends (at `now`) live sessions last seen before `idleBefore`, purges those ended before `purgeBefore`; returns how many it ended. */
  expireIdle(o: { idleBefore: number; now: number; purgeBefore: number }): Promise<number>;
}

/**
 * Records kept in this process only (the SQLite default): bounded to `max` sessions (the least
 * recently opened go first). Ended records are dropped at once: to a caller, ended and unknown are alike.
 */
export class MemorySessionRecords implements SessionRecords {
  readonly shared = false;
  private readonly records: LRUCache<string, SessionRecord>;

  constructor(max: number) {
    this.records = new LRUCache({ max });
  }

  /** The process's own table bounds its transports (and these records with them): `room` is for shared records. */
  async open(
    r: Omit<SessionRecord, "endedAt" | "lastSeenAt">,
    _room: SessionRoom,
  ): Promise<{ opened: boolean; ended: number }> {
    this.records.set(r.id, { ...r, lastSeenAt: r.createdAt, endedAt: undefined });
    return { opened: true, ended: 0 };
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    return this.records.get(id);
  }

  async touch(id: string, now: number): Promise<void> {
    const r = this.records.peek(id);
    if (r && r.endedAt === undefined && r.lastSeenAt < now) this.records.set(id, { ...r, lastSeenAt: now });
  }

  async end(id: string, _now: number): Promise<void> {
    this.records.delete(id);
  }

  async notLive(ids: readonly string[]): Promise<string[]> {
    return ids.filter((id) => !this.records.has(id));
  }

  async expireIdle(o: { idleBefore: number; now: number; purgeBefore: number }): Promise<number> {
    let n = 0;
    for (const [id, r] of [...this.records.entries()]) {
      if (r.lastSeenAt < o.idleBefore) {
        this.records.delete(id);
        n++;
      }
    }
    return n;
  }
}
