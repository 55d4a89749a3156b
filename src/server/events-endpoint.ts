import type http from "node:http";
import { LRUCache } from "lru-cache";
import type { Clock } from "../clock/clock.js";
import { BoundedSubscriber } from "../events/bounded-subscriber.js";
import type { BrokerEvent } from "../events/broker-event.js";
import type { CallEventBus } from "../events/event-bus.js";
import type { LimitRefusals } from "../limits/limit-kind.js";
import { TenantCounter } from "../limits/tenant-counter.js";
import type { Logger } from "../log/logger.js";
import { type HostBinding, TEAM_BINDING } from "../tenancy/host-binding.js";
import type { OriginGuard } from "./host-auth.js";
import type { HostTeamAuth } from "./host-teams.js";
import { type RouteHandler, sendJson } from "./http-server.js";
import { sendRefusal, type TenantGuard } from "./tenant-guard.js";

// GET /v1/events: the call event stream as Server-Sent Events, for a host token bound to a tenant,
// carrying that tenant's events only: a team's, or those of every team of an Enterprise Grid org
// (`?team_id=T…` narrows a stream to one team the token may act in; another tenant's is 403).
// Each stream has a bounded backlog: a client that stops reading
// is dropped once it falls `clientBuffer` events behind, so no call ever waits for a reader. The
// events themselves hold ids, codes, timings and redacted progress text (src/events/call-event.ts).

/** Teams whose verdict one enterprise stream remembers (team → may it see their events). */
const MAX_STREAM_TEAMS = 1_000;

/** Which teams' events one stream carries: decided at once for a team, looked up (then remembered) for an org. */
interface TeamFilter {
  /** true / false when known now, undefined when the directory must be asked. */
  known(teamId: string): boolean | undefined;
  resolve(teamId: string): Promise<boolean>;
}

/** One queued event: its team (checked before it is written, for an org stream) and its SSE frame. */
interface Queued {
  readonly teamId: string;
  readonly frame: string;
}

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
export function sseFrame(e: BrokerEvent, seq: number): string {
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
    private readonly tenants: TenantGuard,
    private readonly o: EventsEndpointOptions,
  ) {
    this.perTeam = new TenantCounter(Math.min(o.maxClientsPerTeam ?? o.maxClients, o.maxClients));
  }

  /** Streams open right now. */
  get clientCount(): number {
    return this.clients.size;
  }

  readonly handler: RouteHandler = async (req, res, url) => {
    const o = this.origin.check(req);
    if (o !== "ok") return sendJson(res, 403, { error: o });
    const who = this.auth.verify(req);
    if (who.kind === "unauthorized")
      return sendJson(res, 401, { error: "unauthorized" }, { "www-authenticate": 'Bearer realm="slaude-connect"' });
    const binding = who.caller.binding;
    // A token that names no tenant would have to see every tenant's calls: refused instead.
    if (binding.kind === "unbound")
      return sendJson(res, 403, {
        error: "token_not_bound_to_team",
        message:
          "bind this host token to its team or org in SLAUDE_HOST_TOKENS as <team_id>:<token> or <enterprise_id>:<token>",
      });
    const only = url.searchParams.get("team_id");
    if (only !== null && !TEAM_BINDING.test(only))
      return sendJson(res, 400, { error: "invalid_team_id", message: "team_id must be a Slack team id (T…)" });
    if (only !== null) {
      const verdict = await this.tenants.check(binding, only);
      if (!verdict.ok) return sendRefusal(res, verdict.reason, only);
    }
    if (this.clients.size >= this.o.maxClients) return this.full(res);
    // Counted per tenant the stream is for: the team it names, else the token's team or org.
    const tenant = only ?? (binding.kind === "team" ? binding.teamId : binding.enterpriseId);
    if (this.perTeam.atCap(tenant)) {
      this.o.refused?.("event_streams");
      return sendJson(
        res,
        429,
        {
          error: "too_many_event_streams",
          message: `at most ${this.perTeam.capPerTeam} event streams may be open for one team`,
        },
        { "retry-after": "5" },
      );
    }
    this.open(
      req,
      res,
      only ?? binding,
      only !== null
        ? `team ${only}`
        : binding.kind === "team"
          ? `team ${binding.teamId}`
          : `org ${binding.enterpriseId}`,
      tenant,
    );
  };

  /** The filter of a stream for one team (`only`, or a team binding), or for every team of an org binding. */
  private filterFor(scope: string | HostBinding): TeamFilter {
    if (typeof scope !== "string" && scope.kind === "enterprise") {
      const seen = new LRUCache<string, boolean>({ max: MAX_STREAM_TEAMS });
      return {
        known: (t) => seen.get(t),
        resolve: async (t) => {
          const v = await this.tenants.check(scope, t, true);
          // A directory that did not answer hides this event only: the next one asks again.
          if (v.ok || v.reason !== "directory_unavailable") seen.set(t, v.ok);
          return v.ok;
        },
      };
    }
    // An unbound binding never gets here (refused above); if it did, it would match no team.
    const team = typeof scope === "string" ? scope : scope.kind === "team" ? scope.teamId : undefined;
    return { known: (t) => t === team, resolve: async (t) => t === team };
  }

  private full(res: http.ServerResponse): void {
    sendJson(
      res,
      503,
      { error: "too_many_event_streams", message: `at most ${this.o.maxClients} event streams may be open` },
      { "retry-after": "5" },
    );
  }

  private open(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    scope: string | HostBinding,
    label: string,
    teamId: string,
  ): void {
    let blocked = false;
    let closed = false;
    let pumping = false;
    const teams = this.filterFor(scope);
    const pump = async (): Promise<void> => {
      if (blocked || closed || pumping) return;
      pumping = true;
      try {
        for (let item = sub.take(); item !== undefined; item = sub.take()) {
          // An org stream meets a team it has not judged yet: asked once, in order, before writing.
          if (!(teams.known(item.teamId) ?? (await teams.resolve(item.teamId)))) continue;
          if (closed) return;
          if (!res.write(item.frame)) {
            // The socket is full: the rest waits in the bounded backlog until it drains.
            blocked = true;
            res.once("drain", () => {
              blocked = false;
              void pump();
            });
            return;
          }
        }
      } finally {
        pumping = false;
      }
    };
    const maybeSub = BoundedSubscriber.attach<Queued>(this.bus, {
      max: this.o.clientBuffer,
      // Known refusals never enter the backlog; unknown teams of an org stream are judged by the pump.
      filter: (e) => teams.known(e.teamId) !== false,
      map: (e, seq) => ({ teamId: e.teamId, frame: sseFrame(e, seq) }),
      // Written after the emitting call's synchronous step, never inside it.
      onReady: () => void setImmediate(() => void pump()),
      onDrop: (backlog) => {
        this.o.log.warn("events stream dropped: the client fell behind", {
          stream: label,
          backlog,
          limit: this.o.clientBuffer,
        });
        res.destroy();
      },
    });
    if (!maybeSub) {
      this.full(res);
      return;
    }
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
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    // The first comment tells the client its subscription is live: events from here on reach it.
    res.write(`: subscribed to ${label}\n\n`);
  }

  /** Ends every open stream (graceful shutdown). */
  close(): void {
    for (const end of [...this.clients]) end();
  }
}
