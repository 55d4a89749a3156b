import type http from "node:http";
import type { Clock } from "../clock/clock.js";
import type { CallEvent } from "../events/call-event.js";
import { BoundedSubscriber } from "../events/bounded-subscriber.js";
import type { CallEventBus } from "../events/event-bus.js";
import type { LimitRefusals } from "../limits/limit-kind.js";
import { TenantCounter } from "../limits/tenant-counter.js";
import type { Logger } from "../log/logger.js";
import type { OriginGuard } from "./host-auth.js";
import type { HostTeamAuth } from "./host-teams.js";
import { sendJson, type RouteHandler } from "./http-server.js";

// GET /v1/events: the call event stream as Server-Sent Events, for a host token bound to a team,
// carrying that team's events only. Each stream has a bounded backlog: a client that stops reading
// is dropped once it falls `clientBuffer` events behind, so no call ever waits for a reader. The
// events themselves hold ids, codes, timings and redacted progress text (src/events/call-event.ts).

/** How many streams, how far behind one may fall, and how often an idle stream gets a keep-alive. */
export interface EventsEndpointOptions {
  readonly maxClients: number;
  readonly clientBuffer: number;
  /** A comment line on an idle stream, so proxies do not close it (default 15 s). */
  readonly heartbeatMs?: number;
  readonly clock: Clock;
  readonly log: Logger;
  /** Streams one team may hold open (SLAUDE_EVENTS_MAX_CLIENTS_PER_TEAM); unset: the whole cap. */
  readonly maxClientsPerTeam?: number;
  /** Told of each refusal by the per-team cap (the limit refusals metric). */
  readonly refused?: LimitRefusals;
}

/** One event as an SSE frame: its sequence number, its kind, and the event as one JSON line. */
export function sseFrame(e: CallEvent, seq: number): string {
  // JSON.stringify escapes line breaks, so `data:` is always a single line.
  return `id: ${seq}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;
}

/** The events endpoint: its open streams, and the route handler that opens them. */
export class EventsEndpoint {
  private readonly clients = new Set<() => void>();
  /** Streams per team: one team's readers cannot take every stream. */
  readonly perTeam: TenantCounter;

  constructor(
    private readonly bus: CallEventBus,
    private readonly auth: HostTeamAuth,
    private readonly origin: OriginGuard,
    private readonly o: EventsEndpointOptions,
  ) {
    this.perTeam = new TenantCounter(Math.min(o.maxClientsPerTeam ?? o.maxClients, o.maxClients));
  }

  /** Streams open right now. */
  get clientCount(): number {
    return this.clients.size;
  }

  readonly handler: RouteHandler = (req, res) => {
    const o = this.origin.check(req);
    if (o !== "ok") return sendJson(res, 403, { error: o });
    const who = this.auth.verify(req);
    if (who.kind === "unauthorized") return sendJson(res, 401, { error: "unauthorized" }, { "www-authenticate": 'Bearer realm="slaude-connect"' });
    // A token that names no team would have to see every team's calls: refused instead.
    if (who.kind === "unbound") return sendJson(res, 403, { error: "token_not_bound_to_team", message: "bind this host token to its team in SLAUDE_HOST_TOKENS as <team_id>:<token>" });
    if (this.clients.size >= this.o.maxClients) return this.full(res);
    if (this.perTeam.atCap(who.teamId)) {
      this.o.refused?.("event_streams");
      return sendJson(res, 429, { error: "too_many_event_streams", message: `at most ${this.perTeam.capPerTeam} event streams may be open for one team` }, { "retry-after": "5" });
    }
    this.open(req, res, who.teamId);
  };

  private full(res: http.ServerResponse): void {
    sendJson(res, 503, { error: "too_many_event_streams", message: `at most ${this.o.maxClients} event streams may be open` }, { "retry-after": "5" });
  }

  private open(req: http.IncomingMessage, res: http.ServerResponse, teamId: string): void {
    let blocked = false;
    let closed = false;
    const pump = (): void => {
      if (blocked || closed) return;
      for (let frame = sub.take(); frame !== undefined; frame = sub.take()) {
        if (!res.write(frame)) {
          // The socket is full: the rest waits in the bounded backlog until it drains.
          blocked = true;
          res.once("drain", () => {
            blocked = false;
            pump();
          });
          return;
        }
      }
    };
    const maybeSub = BoundedSubscriber.attach(this.bus, {
      max: this.o.clientBuffer,
      filter: (e) => e.teamId === teamId,
      map: sseFrame,
      // Written after the emitting call's synchronous step, never inside it.
      onReady: () => void setImmediate(pump),
      onDrop: (backlog) => {
        this.o.log.warn("events stream dropped: the client fell behind", { teamId, backlog, limit: this.o.clientBuffer });
        res.destroy();
      },
    });
    if (!maybeSub) return this.full(res);
    const sub = maybeSub;
    const heartbeat = this.o.clock.setInterval(
      () => {
        if (!blocked && sub.backlog === 0 && !closed) res.write(": keep-alive\n\n");
      },
      this.o.heartbeatMs ?? 15_000,
      { unref: true },
    );
    const end = (): void => {
      if (closed) return;
      closed = true;
      heartbeat.cancel();
      sub.close();
      this.clients.delete(end);
      this.perTeam.release(teamId);
      if (!res.destroyed) res.end();
    };
    this.clients.add(end);
    this.perTeam.tryAcquire(teamId);
    res.on("close", end);
    req.on("error", end);
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", connection: "keep-alive", "x-accel-buffering": "no" });
    // The first comment tells the client its subscription is live: events from here on reach it.
    res.write(`: subscribed to team ${teamId}\n\n`);
  }

  /** Ends every open stream (graceful shutdown). */
  close(): void {
    for (const end of [...this.clients]) end();
  }
}
