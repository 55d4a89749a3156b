import type { ServerContext } from "@modelcontextprotocol/server";
import type { RowProof } from "../domain/row-proof.js";
import type { Logger } from "../log/logger.js";
import type { PinRead } from "../pinning/service.js";
import type { Connection } from "../store/records.js";
import type { TurnResolution } from "../turns/turn-rules.js";
import type { ProvedTurn } from "../turns/turn-store.js";
import type { CallerContext } from "./deps.js";

// What a broker tool handler reads of the HTTP request the SDK's transport hands over: the turn
// the host named and the request's id, both from the web request's headers, and the turn read the
// MCP endpoint may have started for it.

/**
 * A turn read started by the MCP endpoint while it looked the request's session up (shared
 * records), so the two round trips overlap. The resolver uses it only for the very thread and
 * turn id it would read itself.
 */
export interface TurnAhead {
  /** threadKey() of the thread the request's X-Slaude-Thread names. */
  readonly threadKey: string;
  readonly turnId: string | undefined;
  readonly resolution: Promise<TurnResolution>;
  /** The same read with the thread's state and its proof, where the turns give one (what the warm memo keeps). */
  readonly proved?: Promise<ProvedTurn>;
  /** For an mcp_call: the facts read ahead with the turn, for the caller the model claims. */
  readonly facts?: FactsAhead;
}

/**
 * The reads of an mcp_call's facts the MCP endpoint started with its turn read: the own row of the
 * user the request claims to act for (`on_behalf_of`) and the tool's pin. The facts stage uses
 * them only when the live turn names that very user and the call names that very service and tool
 * in that thread; otherwise they are dropped unread. Both are reads: nothing is decided or written.
 */
export interface FactsAhead {
  readonly threadKey: string;
  readonly caller: string;
  readonly service: string;
  readonly tool: string;
  readonly own: Promise<Connection | undefined>;
  /** The tool's pin, read as PinService.read reads it (undefined: a pin write was under way). */
  readonly pin: PinRead | undefined;
  /** The own row's proof from the same read, where the store gives one (PostgreSQL: row-proof.ts). */
  readonly ownProof?: Promise<RowProof>;
  /**
   * Set when these facts are not read but remembered (the warm memo): the proofs the call's start
   * must hold. The call then runs only the warm path (the own row, its rate taken with its started
   * row) and marks `attempt.unproved` for anything else: the endpoint then handles the request
   * again from fresh reads, and the attempt leaves no trace (no row, no token, no event).
   */
  readonly proofs?: readonly RowProof[];
  /** What became of the call these facts were read for (written by the call, read by the endpoint). */
  readonly attempt?: WarmAttempt;
}

/** What the call made of its facts ahead: whether it ran on the own row they name, or has to be handled again. */
export interface WarmAttempt {
  /** The call started on the own row of these facts (its call_started row committed). */
  ran: boolean;
  /** Remembered facts that did not hold (a proof failed, or the call left the warm path): nothing was done. */
  unproved: boolean;
  /**
   * With remembered facts: settles once the call knows whether they held: `unproved`, or
   * `answered` (its start committed, or it ended otherwise: its answer stands). The endpoint holds
   * the answer until then; the first settle wins.
   */
  readonly decided?: Promise<"unproved" | "answered">;
  readonly settle?: (v: "unproved" | "answered") => void;
  /** Called once, when the call starts on the own row of these facts (the endpoint remembers them then). */
  onRan?: () => void;
}

/** A fresh attempt slot; `remembered`: one whose answer the endpoint waits to see decided. */
export function warmAttempt(remembered: boolean): WarmAttempt {
  if (!remembered) return { ran: false, unproved: false };
  let settle!: (v: "unproved" | "answered") => void;
  const decided = new Promise<"unproved" | "answered">((r) => (settle = r));
  return { ran: false, unproved: false, decided, settle };
}

/** Thrown by a call made from remembered facts that cannot go on (see FactsAhead.proofs): nothing was done. */
export class UnprovedAttempt extends Error {
  constructor() {
    super("a call made from remembered rows did not prove them");
    this.name = "UnprovedAttempt";
  }
}

/** Per-request facts the caller is resolved from: the turn the host named (`X-Slaude-Turn`), if any. */
export interface CallerRequest {
  readonly turnId?: string;
  /** The endpoint's read of the turn, when it started one for this request. */
  readonly ahead?: TurnAhead;
}

/** Turn reads started for web requests handed to the transport (dropped with the request). */
const turnsAhead = new WeakMap<Request, TurnAhead>();

/** Attaches the endpoint's turn read (if it started one) to the web request the transport is given. */
export function attachTurnAhead(req: Request, ahead: TurnAhead | undefined): Request {
  if (ahead) turnsAhead.set(req, ahead);
  return req;
}

/** Resolves the caller of one tool call, live; a string is a refusal code. */
export type CallerResolver = (
  req: CallerRequest,
) => Promise<CallerContext | "thread_mismatch" | "turn_ambiguous" | "turn_unknown">;

/** The turn a request names: the `X-Slaude-Turn` header of the HTTP request the transport hands over. */
export function callerRequest(ctx: Pick<ServerContext, "http">): CallerRequest {
  // A repeated header arrives joined ("a, b"): not a turn id, so it is refused as unknown, never guessed between.
  const req = ctx.http?.req;
  const v = req?.headers.get("x-slaude-turn");
  const ahead = req ? turnsAhead.get(req) : undefined;
  const turn = v === null || v === undefined ? {} : { turnId: v };
  return ahead ? { ...turn, ahead } : turn;
}

/**
 * `log` with the request's id bound: the `X-Request-Id` the MCP endpoint set on the web request it
 * handed the transport (the HTTP server's id for this request); `log` itself when there is none.
 */
export function requestLog(log: Logger, ctx: Pick<ServerContext, "http">): Logger {
  const requestId = ctx.http?.req?.headers.get("x-request-id");
  return requestId ? log.with({ requestId }) : log;
}
