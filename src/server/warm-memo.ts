import { type FactsAhead, type TurnAhead, warmAttempt } from "../broker/tool-request.js";
import { toolInputs } from "../broker/tool-schemas.js";
import type { RowProof } from "../domain/row-proof.js";
import type { PinRead } from "../pinning/service.js";
import type { Connection, ToolPin } from "../store/records.js";
import type { TurnResolution } from "../turns/turn-rules.js";
import type { SessionRecord } from "./session-records.js";

// The rows a warm mcp_call on PostgreSQL was decided from, remembered per local session, so the next
// call of that session sends no read before it commits its write-ahead row (issue 25, item 5: the
// first of its three round trips). Nothing here is trusted: the next call is decided from these rows
// and runs only if each still has the version it was read with in the snapshot of the statement that
// commits its call_started row (src/store/postgres/row-proof.ts). Any other outcome, and a failed
// proof, is handled again from fresh reads by the endpoint; see FactsAhead.proofs.

/** How long remembered rows are tried at most: well within any xid horizon, and a fresh read now and then. */
export const WARM_MEMO_MAX_AGE_MS = 10_000;

/** One session's remembered rows: its record, its thread's turns, the caller's own row for one tool, its pin. */
export interface WarmEntry {
  readonly record: SessionRecord;
  readonly threadKey: string;
  /** The thread's turns as read, resolved again for a later call (undefined: its seen time is due, read afresh). */
  readonly later: (turnId: string | undefined, now: number) => TurnResolution | undefined;
  readonly caller: string;
  readonly service: string;
  readonly tool: string;
  readonly own: Connection;
  readonly pin: ToolPin | undefined;
  /** The four proofs, in the order the start's statement checks them. */
  readonly proofs: readonly RowProof[];
  /** When the rows were read (the clock's ms). */
  readonly at: number;
}

/** The facts a request names: the turn id it carries, and the target of its mcp_call. */
export interface WarmRequest {
  readonly turnId: string | undefined;
  readonly caller: string;
  readonly service: string;
  readonly tool: string;
}

/**
 * The mcp_call target of a JSON-RPC body, if it is one `tools/call` of mcp_call whose arguments
 * pass the tool's own input schema: the SDK then runs its handler, which settles the attempt (an
 * input the SDK refuses before any handler runs is never tried from memory).
 */
export function warmRequestOf(body: unknown, turnId: string | undefined): WarmRequest | undefined {
  const b = body as { method?: unknown; params?: { name?: unknown; arguments?: unknown; task?: unknown } } | null;
  if (Array.isArray(body) || b?.method !== "tools/call" || b.params?.name !== "mcp_call") return undefined;
  if (b.params.task !== undefined) return undefined;
  const t = toolInputs.mcp_call.safeParse(b.params.arguments);
  if (!t.success) return undefined;
  return { turnId, caller: t.data.on_behalf_of, service: t.data.service, tool: t.data.tool };
}

/** At most `max` sessions' rows (the session table's cap), each tried for at most `maxAgeMs`. */
export class WarmMemo {
  private readonly entries = new Map<string, WarmEntry>();

  constructor(
    private readonly max: number,
    private readonly maxAgeMs: number = WARM_MEMO_MAX_AGE_MS,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** Whether session `id` has rows remembered (checked before a request's arguments are parsed for them). */
  has(id: string): boolean {
    return this.entries.has(id);
  }

  /**
   * The turn ahead (resolved from memory, with the facts and their proofs) for `r` in session `id`
   * at `now`, when its remembered rows were read for this very caller, service and tool, are young
   * enough, name this caller's turn and a usable own row. Undefined: read afresh.
   */
  attempt(
    id: string,
    r: WarmRequest,
    now: number,
    pinsWritten: number,
  ): { entry: WarmEntry; ahead: TurnAhead } | undefined {
    const e = this.entries.get(id);
    if (!e) return undefined;
    if (now - e.at > this.maxAgeMs) {
      this.entries.delete(id);
      return undefined;
    }
    if (e.caller !== r.caller || e.service !== r.service || e.tool !== r.tool) return undefined;
    const resolution = e.later(r.turnId, now);
    if (resolution?.kind !== "caller" || resolution.userId !== r.caller) return undefined;
    if (e.own.status !== "active" || e.own.expiresAt <= now) return undefined;
    // As good as read now for the run stage: the start's statement proves the pin row unchanged at its commit,
    // which is later than a read sent with it would be. A pin written here since still makes it stale (`after`).
    const pin: PinRead = { pin: Promise.resolve(e.pin), after: pinsWritten, at: performance.now() };
    const facts: FactsAhead = {
      threadKey: e.threadKey,
      caller: e.caller,
      service: e.service,
      tool: e.tool,
      own: Promise.resolve(e.own),
      pin,
      proofs: e.proofs,
      attempt: warmAttempt(true),
    };
    return {
      entry: e,
      ahead: { threadKey: e.threadKey, turnId: r.turnId, resolution: Promise.resolve(resolution), facts },
    };
  }

  /** Remembers `e` for session `id` (the oldest session's rows go first at the cap). */
  set(id: string, e: WarmEntry): void {
    this.entries.delete(id);
    if (this.entries.size >= this.max) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(id, e);
  }

  drop(id: string): void {
    this.entries.delete(id);
  }
}
