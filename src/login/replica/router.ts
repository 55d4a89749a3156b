// Login across replicas: the live-view page and WebSocket of a flow are served by the replica that
// holds it (the one that opened its link). Any other replica forwards the viewer's requests there,
// only to the holder recorded in the database, and a forwarded request is never forwarded again.
// A holder that stopped (its liveness mark is free) is taken over: the flow starts again here.

import type http from "node:http";
import type { Duplex } from "node:stream";
import { parseReplicaUrl } from "../../config/replica-url.js";
import { errorMessage } from "../../domain/errors.js";
import type { Logger } from "../../log/logger.js";
import type { LoginSession } from "../../store/records.js";
import { type LiveViewEndpoint, type LiveViewHandler, readViewerCookie, reject } from "../live-view-endpoint.js";
import type { LoginService } from "../login-service.js";
import { FORWARDED_HEADER, type ReplicaForwarder } from "./forward.js";
import type { LoginReplica } from "./replica.js";

/** Where a viewer's request is served: here, at the recorded holder, or nowhere (a refusal). */
export type LoginRoute =
  | { readonly kind: "local" }
  | { readonly kind: "forward"; readonly holder: string; readonly session: LoginSession }
  | { readonly kind: "misrouted" };

const LOCAL: LoginRoute = { kind: "local" };

/** What the router needs: this replica, the login service, the forwarder and the endpoint it stands in front of. */
export interface LoginRouterDeps {
  readonly replica: LoginReplica;
  readonly logins: LoginService;
  readonly forwarder: ReplicaForwarder;
  readonly liveView: LiveViewEndpoint;
  readonly log: Logger;
}

/** Wraps the live-view page and socket handlers: forwards to the holder, takes over a stopped one. */
export class LoginRouter {
  constructor(private readonly d: LoginRouterDeps) {}

  /**
   * Decides where the viewer's request for `session` is served. Only the viewer's own requests (its
   * cookie matches) of an opened flow held elsewhere are forwarded; everything else is answered here
   * exactly as with one process. A request that was already forwarded is never forwarded again.
   */
  async route(session: LoginSession | undefined, req: http.IncomingMessage): Promise<LoginRoute> {
    const { replica, logins } = this.d;
    const self = replica.self;
    if (!replica.holders.shared || !self || !session || session.status !== "opened") return LOCAL;
    const cookie = readViewerCookie(req);
    if (!cookie || cookie.sessionId !== session.id || !(await logins.viewerMatches(session.id, cookie.secret)))
      return LOCAL;
    const recorded = await replica.holders.holderOf(session.id);
    if (recorded === undefined || recorded === self) return LOCAL;
    // The holder forwarded it here, yet the database names another: never pass it on (no loop).
    if (req.headers[FORWARDED_HEADER] !== undefined) return { kind: "misrouted" };
    const holder = parseReplicaUrl(recorded);
    if (!holder) {
      this.d.log.error("login holder address in the database is not a replica URL: not forwarded", {
        sessionId: session.id,
      });
      return { kind: "misrouted" };
    }
    return { kind: "forward", holder, session };
  }

  /** The holder could not be reached: "local" when it has stopped and this replica took the flow over. */
  private async afterUnreachable(session: LoginSession, holder: string): Promise<"local" | "unreachable"> {
    const { replica, log } = this.d;
    const self = replica.self;
    if (!self || (await replica.holders.alive(holder))) {
      log.warn("login holder unreachable but running", { sessionId: session.id, holder });
      return "unreachable";
    }
    if (!(await replica.holders.takeOver(session.id, holder, self))) return "unreachable";
    log.warn("login taken over from a stopped replica: the flow starts again here", {
      sessionId: session.id,
      from: holder,
    });
    return "local";
  }

  /** GET /login/l/<token> in front of the endpoint's page handler. */
  readonly page: LiveViewHandler = async (req, res, url) => {
    const { liveView, logins, forwarder, replica } = this.d;
    // One process (SQLite): the endpoint alone, exactly as without replicas.
    if (!replica.holders.shared) return liveView.page(req, res, url);
    const session = await logins.sessionOfToken(url.pathname.slice("/login/l/".length));
    const r = await this.route(session, req);
    if (r.kind === "local") return liveView.page(req, res, url);
    if (r.kind === "misrouted") return liveView.refuse(res, "misrouted");
    const sent = await forwarder.forwardRequest(r.holder, req, res);
    if (sent === "relayed") return;
    if (sent === "busy") return liveView.refuse(res, "unreachable");
    // A taken-over flow starts again here for the same viewer (LoginLinks.open resumes it).
    if ((await this.afterUnreachable(r.session, r.holder)) === "local") return liveView.page(req, res, url);
    liveView.refuse(res, "unreachable");
  };

  /** Upgrade handler for /login/ws in front of the endpoint's. */
  readonly upgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer): void => {
    const { liveView, logins, forwarder, replica } = this.d;
    if (!replica.holders.shared) {
      liveView.upgrade(req, socket, head);
      return;
    }
    void (async () => {
      const sid = new URL(req.url ?? "/", "http://x").searchParams.get("s");
      const session = sid ? await logins.sessionOf(sid) : undefined;
      const r = await this.route(session, req);
      if (r.kind === "local") return liveView.upgrade(req, socket, head);
      if (r.kind === "misrouted") return reject(socket, 502);
      const sent = await forwarder.forwardUpgrade(r.holder, req, socket, head);
      if (sent === "relayed") return;
      if (sent === "busy" || (await this.afterUnreachable(r.session, r.holder)) === "unreachable")
        return reject(socket, 503);
      if (logins.resume(r.session) !== "running") return reject(socket, 503);
      liveView.upgrade(req, socket, head);
    })().catch((err: unknown) => {
      this.d.log.warn("login routing failed", { error: errorMessage(err) });
      reject(socket, 500);
    });
  };
}
