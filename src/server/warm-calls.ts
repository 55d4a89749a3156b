import type http from "node:http";
import type { Broker } from "../broker/broker.js";
import type { TurnAhead } from "../broker/tool-request.js";
import type { Clock } from "../clock/clock.js";
import type { RowProof } from "../domain/row-proof.js";
import type { HostCaller } from "./host-teams.js";
import type { McpSessionHost } from "./mcp-session-host.js";
import type { McpSession } from "./mcp-sessions.js";
import type { SessionRecord } from "./session-records.js";
import { WarmMemo, warmRequestOf } from "./warm-memo.js";

// The MCP endpoint's side of the warm memo (warm-memo.ts, PostgreSQL only): a request tried from a
// session's remembered rows, the rows kept once a fresh call started on them, and the answer of a
// remembered attempt held until the call knows whether its rows held.

/** Warm mcp_calls of the sessions this replica holds, from the rows their last one was decided from. */
export class WarmCalls {
  private readonly memo: WarmMemo;

  constructor(
    private readonly host: McpSessionHost,
    private readonly broker: Broker,
    private readonly clock: Clock,
    maxSessions: number,
  ) {
    this.memo = new WarmMemo(maxSessions);
  }

  /** Forgets session `id`'s rows (an attempt from them did not prove them). */
  drop(id: string): void {
    this.memo.drop(id);
  }

  /** The turn ahead of a warm mcp_call of a local session from its remembered rows, if they serve this request. */
  attempt(
    req: http.IncomingMessage,
    body: unknown,
    caller: HostCaller,
    sessionId: string,
    headerThread: string | string[] | undefined,
  ): { session: McpSession; ahead: TurnAhead } | undefined {
    if (!this.memo.has(sessionId)) return undefined;
    const header = req.headers["x-slaude-turn"];
    const r = warmRequestOf(body, typeof header === "string" ? header : undefined);
    if (!r || (header !== undefined && typeof header !== "string")) return undefined;
    const now = this.clock.now();
    const found = this.memo.attempt(sessionId, r, now, this.broker.deps.pins.writesStarted);
    if (!found) return undefined;
    const session = this.host.remembered(sessionId, found.entry.record, headerThread, caller);
    if (!session) {
      this.memo.drop(sessionId);
      return undefined;
    }
    return { session, ahead: found.ahead };
  }

  /** Keeps the rows a warm call was decided from (its reads ahead and the session's), once all are in. */
  async remember(
    sessionId: string,
    record: SessionRecord | undefined,
    sessionProof: RowProof,
    ahead: TurnAhead,
  ): Promise<void> {
    const f = ahead.facts;
    if (!record || !f || !ahead.proved || !f.ownProof || !f.pin?.proof) return;
    try {
      const [turn, own, ownProof, pin, pinProof] = await Promise.all([
        ahead.proved,
        f.own,
        f.ownProof,
        f.pin.pin,
        f.pin.proof,
      ]);
      if (!own) return;
      this.memo.set(sessionId, {
        record,
        threadKey: f.threadKey,
        later: turn.later,
        caller: f.caller,
        service: f.service,
        tool: f.tool,
        own,
        pin,
        proofs: [sessionProof, turn.proof, ownProof, pinProof],
        at: this.clock.now(),
      });
    } catch {
      // A read that failed leaves nothing to remember: the next call reads afresh.
    }
  }
}

/**
 * What to do with the transport's `answer` to a request whose turn ahead is `ahead`: a remembered
 * attempt's answer streams out before the call knows whether its rows held, so it is held until
 * then (`unproved`: dropped, the request is handled again). Only a request the transport took (its
 * stream open) runs the handler that settles the attempt; a client that leaves stops the wait.
 */
export async function heldAnswer(
  ahead: TurnAhead | undefined,
  answer: Response,
  res: http.ServerResponse,
): Promise<"send" | "unproved" | "gone"> {
  const attempt = ahead?.facts?.attempt;
  if (!attempt?.decided || answer.status !== 200 || !answer.body) return "send";
  const left = new Promise<"left">((resolve) => res.once("close", () => resolve("left")));
  const v = await Promise.race([attempt.decided, left]);
  if (v === "answered") return "send";
  await answer.body.cancel().catch(() => {});
  return v === "unproved" ? "unproved" : "gone";
}
