// The login service: the one object the HTTP endpoint, Slack and the app talk to. It wires the
// links (links.ts), the running flows (flow-registry.ts), the capture strategies (strategies/),
// each flow's browser (flow-browser.ts) and how flows end (flow-outcome.ts), and routes each
// viewer's messages to them.

import type { Clock } from "../clock/clock.js";
import type { ServiceRegistry } from "../config/registry.js";
import type { ConnectionLifecycle } from "../connections/lifecycle.js";
import { errorMessage } from "../domain/errors.js";
import type { LimitRefusals } from "../limits/limit-kind.js";
import type { Logger } from "../log/logger.js";
import type { LoginSession } from "../store/records.js";
import type { Store } from "../store/store.js";
import type { KeyRing } from "../vault/keyring.js";
import { type FlowBrowserDeps, forwardToBrowser, launchFlowBrowser, startFlowBrowser } from "./flow-browser.js";
import { FlowOutcomes } from "./flow-outcome.js";
import { type ClaimRefusal, type Flow, FlowRegistry, needsBrowser, type Viewer } from "./flow-registry.js";
import { isTokenShaped, LoginLinks, type MintRequest, type OpenRefusal, secretHash } from "./links.js";
import type { DeviceGrantFactory, LoginBrowserFactory, LoginNotifier, OAuthFlowFactory } from "./ports.js";
import type { ClientMessage, ServerMessage } from "./protocol.js";
import type { HolderRecord } from "./replica/replica.js";
import { CookieStrategy } from "./strategies/cookie.js";
import { DeviceStrategy } from "./strategies/device.js";
import { OAuthStrategy } from "./strategies/oauth.js";
import { PasteStrategy } from "./strategies/paste.js";
import type { CaptureStrategy, FlowControl, Viewport } from "./strategies/strategy.js";
import { traceLogin } from "./trace.js";

export type { OpenRefusal } from "./links.js";
// The ports live in ports.ts; re-exported so callers keep importing them from here.
export type {
  LoginBrowser,
  LoginBrowserFactory,
  LoginBrowserRequest,
  LoginNotifier,
  OAuthFlow,
  OAuthFlowFactory,
} from "./ports.js";

/** Settings of the login service. */
export interface LoginSettings {
  readonly publicUrl: string;
  readonly linkTtlMs: number;
  readonly flowTimeoutMs: number;
  /** Browser slots: flows that need a browser, counted from the link's first load until they end. */
  readonly maxConcurrent: number;
  /** Browser slots one team may hold (SLAUDE_LOGIN_MAX_CONCURRENT_PER_TEAM); unset: all of them. */
  readonly maxConcurrentPerTeam?: number;
  /** How long a flow waits, with no socket attached, before it ends and its browser is killed. */
  readonly detachGraceMs: number;
}

/** The login service's adapters and settings (built by src/app). */
export interface LoginDeps {
  readonly store: Store;
  readonly keys: KeyRing;
  readonly registry: ServiceRegistry;
  readonly lifecycle: ConnectionLifecycle;
  /** Every login deadline, grace period and poll runs on it. */
  readonly clock: Clock;
  readonly log: Logger;
  readonly browsers: LoginBrowserFactory;
  readonly notifier?: LoginNotifier;
  readonly oauth?: OAuthFlowFactory;
  /** Device authorization grants (RFC 8628) for `device` services. */
  readonly device?: DeviceGrantFactory;
  /** Records this replica as the holder of the flows it opens (replicas on PostgreSQL). */
  readonly holding?: HolderRecord;
  readonly settings: LoginSettings;
  /** Told of each login refused by the per-team cap (the limit refusals metric). */
  readonly refused?: LimitRefusals;
}

/**
 * Login flows: mints one-time links bound to a Slack user, lets exactly one browser open each,
 * drives the confined browser and the capture strategy, and stores the credential for the user
 * the link was minted for, and only from the browser that opened it. At most `maxConcurrent`
 * flows that need a browser run at once, each with at most one browser and one live socket.
 */
export class LoginService {
  private readonly flows: FlowRegistry;
  private readonly links: LoginLinks;
  private readonly outcomes: FlowOutcomes;
  private readonly browserDeps: FlowBrowserDeps;
  private readonly strategies: Record<CaptureStrategyName, CaptureStrategy>;
  private readonly launches = new Set<Promise<void>>();

  constructor(private readonly deps: LoginDeps) {
    const { settings } = deps;
    this.flows = new FlowRegistry({
      maxConcurrent: settings.maxConcurrent,
      ...(settings.maxConcurrentPerTeam !== undefined ? { maxPerTeam: settings.maxConcurrentPerTeam } : {}),
      ...(deps.refused ? { refused: deps.refused } : {}),
      graceMs: settings.detachGraceMs,
      clock: deps.clock,
      timers: {
        onTimeout: (f) =>
          void this.outcomes.end(f, "expired", "The login timed out. Ask for a new link with /connect."),
        onAbandoned: (f) =>
          void this.outcomes.end(
            f,
            "expired",
            "Nobody was watching this login, so it was stopped. Ask for a new link with /connect.",
            "abandoned",
          ),
      },
    });
    this.links = new LoginLinks({
      store: deps.store,
      keys: deps.keys,
      registry: deps.registry,
      clock: deps.clock,
      flows: this.flows,
      settings,
      ...(deps.holding ? { holding: deps.holding } : {}),
    });
    this.outcomes = new FlowOutcomes({
      store: deps.store,
      lifecycle: deps.lifecycle,
      clock: deps.clock,
      log: deps.log,
      flows: this.flows,
      ...(deps.notifier ? { notifier: deps.notifier } : {}),
    });
    this.browserDeps = { browsers: deps.browsers, log: deps.log, outcomes: this.outcomes };
    const control: FlowControl = {
      startBrowser: (f, url, viewport, intercept) => startFlowBrowser(this.browserDeps, f, url, viewport, intercept),
      complete: (f, credential) => this.outcomes.complete(f, credential),
      fail: (f, message, decision) => this.outcomes.end(f, "failed", message, decision),
      background: (what, p) => this.background(what, p),
      clock: deps.clock,
      log: deps.log,
    };
    this.strategies = {
      paste: new PasteStrategy(control),
      cookie: new CookieStrategy(control),
      oauth: new OAuthStrategy(control, deps.oauth),
      device: new DeviceStrategy(control, deps.device),
    };
  }

  /** Number of login flows in progress (a link opened in a browser, not yet ended). */
  get activeFlows(): number {
    return this.flows.size;
  }

  /** Number of flows with a live browser. */
  get activeBrowsers(): number {
    return this.flows.activeBrowsers;
  }

  /** Teams holding their whole per-team share of browser slots (the tenants-at-limit gauge). */
  get teamsAtLoginCap(): number {
    return this.flows.perTeam.teamsAtCap();
  }

  /** Browser slots held (never above `maxConcurrent`). */
  get slotsInUse(): number {
    return this.flows.slotsInUse;
  }

  /** Mints a one-time link (see LoginLinks.mint); throws LoginError when the service or scope does not allow it. */
  mint(m: MintRequest): Promise<{ url: string; expiresAt: number; sessionId: string }> {
    return this.links.mint(m);
  }

  /** Opens a link for a browser (see LoginLinks.open): the first one consumes it and gets a viewer secret. */
  open(
    token: string,
    viewerSecret: string | undefined,
  ): Promise<{ session: LoginSession; viewerSecret: string } | { refused: OpenRefusal }> {
    return this.links.open(token, viewerSecret);
  }

  /** The open session `id`, if `viewerSecret` is the one that opened it. */
  viewerMatches(id: string, viewerSecret: string | undefined): Promise<LoginSession | undefined> {
    return this.links.viewerMatches(id, viewerSecret);
  }

  /** The session a link token names (any status), without opening it; undefined for an unknown token. */
  async sessionOfToken(token: string): Promise<LoginSession | undefined> {
    return isTokenShaped(token)
      ? this.deps.store.loginSessions.getByTokenHash(secretHash(this.deps.keys, token))
      : undefined;
  }

  /** The login session `id` (any status). */
  sessionOf(id: string): Promise<LoginSession | undefined> {
    return this.deps.store.loginSessions.get(id);
  }

  /** Runs the opened flow of `session` on this replica (see LoginLinks.resume): a flow taken over from a stopped replica. */
  resume(session: LoginSession): "running" | "full" | "invalid" {
    return this.links.resume(session);
  }

  /** Makes a socket the flow's one viewer; refused while another socket is live or when the flow is not running. */
  claim(sessionId: string): Viewer | ClaimRefusal {
    return this.flows.claim(sessionId);
  }

  /** Attaches the viewer's socket to its flow, starting the flow's one browser if it has none. Never rejects. */
  async attach(viewer: Viewer, send: (m: ServerMessage) => void, viewport: Viewport): Promise<void> {
    const f = this.flows.flowOf(viewer);
    if (!f) {
      send({
        type: "status",
        state: "failed",
        message: "This login is no longer running. Ask for a new link with /connect.",
      });
      return;
    }
    f.send = send;
    traceLogin("flow_bound", f.session.id);
    const strategy = this.strategyOf(f);
    send({
      type: "strategy",
      strategy: f.service.entry.capture.strategy,
      service: f.service.displayName,
      browser: needsBrowser(f.service) && f.service.entry.capture.strategy !== "device",
    });
    strategy.greet(f);
    if (!needsBrowser(f.service)) return;
    if (f.browser) {
      if (strategy.browserSignsIn) send({ type: "status", state: "waiting", message: "Waiting for you to sign in." });
      return;
    }
    if (!f.launch) {
      const launch = launchFlowBrowser(this.browserDeps, f, strategy, viewport);
      f.launch = launch;
      this.launches.add(launch);
      void launch.finally(() => this.launches.delete(launch));
    } else if (strategy.browserSignsIn) {
      send({ type: "status", state: "loading", message: "Opening the sign-in page…" });
    }
    await f.launch;
  }

  /** Handles one validated message from the flow's viewer; messages from any other socket are dropped. */
  async input(viewer: Viewer, m: ClientMessage): Promise<void> {
    const f = this.flows.flowOf(viewer);
    if (!f) return;
    switch (m.type) {
      case "mouse":
      case "wheel":
      case "key":
      case "text":
        return forwardToBrowser(f.browser, m);
      case "paste":
        return this.strategyOf(f).paste(f, m.fields);
      case "done":
        return this.strategyOf(f).done(f);
      case "cancel":
        return this.outcomes.end(f, "cancelled", "Cancelled. Nothing was stored.");
      case "viewport":
        return;
    }
  }

  /** The viewer's socket closed: the flow waits the grace period for a reload, then ends and kills its browser. */
  detach(viewer: Viewer): void {
    this.flows.detach(viewer);
  }

  /** Expires unopened links past their TTL. */
  async reap(): Promise<number> {
    return (await this.deps.store.loginSessions.expireDue(this.deps.clock.now())).length;
  }

  /** Ends every flow and waits until every browser, those still starting included, is closed (shutdown). */
  async shutdown(): Promise<void> {
    this.flows.close();
    await Promise.all(this.flows.all().map((f) => this.outcomes.end(f, "cancelled", "The broker is shutting down.")));
    await Promise.all([...this.launches]);
  }

  private strategyOf(f: Flow): CaptureStrategy {
    return this.strategies[f.service.entry.capture.strategy];
  }

  /** Runs work started by a timer or a browser callback: a failure is logged, never an unhandled rejection. */
  private background(what: string, p: Promise<void>): void {
    p.catch((err: unknown) => this.deps.log.warn(`login ${what} failed`, { error: errorMessage(err) }));
  }
}

type CaptureStrategyName = Flow["service"]["entry"]["capture"]["strategy"];
