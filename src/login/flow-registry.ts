// The running login flows: from the first load of its link until it completes, is cancelled, times
// out, is abandoned by its viewer, or fails. A flow that needs a browser holds one of the broker's
// SLAUDE_LOGIN_MAX_CONCURRENT browser slots for all of that time, not only while Chromium runs.
import type { Clock, Timer } from "../clock/clock.js";
import type { Service } from "../config/registry.js";
import type { LimitRefusals } from "../limits/limit-kind.js";
import { TenantCounter } from "../limits/tenant-counter.js";
import type { LoginSession } from "../store/records.js";
import type { LoginBrowser, OAuthFlow } from "./ports.js";
import type { ServerMessage } from "./protocol.js";

/** The one live socket allowed to drive a flow, handed out by LoginService.claim; compared by identity. */
export interface Viewer {
  readonly sessionId: string;
}

/** Why a socket could not become a flow's viewer: another socket is live, or the flow is not running. */
export type ClaimRefusal = "busy" | "gone";

/** A flow's state; owned by the registry, driven by LoginService and the capture strategies. */
export interface Flow {
  readonly session: LoginSession;
  readonly service: Service;
  /** Whether the flow still holds a browser slot (given back once its browser is gone). */
  holdsSlot: boolean;
  browser: LoginBrowser | undefined;
  /** The one browser start of this flow, while it runs; later sockets wait for it instead of starting another. */
  launch: Promise<void> | undefined;
  viewer: Viewer | undefined;
  send: ((m: ServerMessage) => void) | undefined;
  /** The flow's deadline (SLAUDE_LOGIN_TIMEOUT_SECONDS). */
  timer: Timer | undefined;
  /** Runs while nobody watches: the flow ends if no socket claims it in time. */
  graceTimer: Timer | undefined;
  /** A strategy's repeating check (the cookie poll); stopped when the flow is removed. */
  poll: Timer | undefined;
  oauth: OAuthFlow | undefined;
  ended: boolean;
}

/**
 * Whether a service's flow holds a login slot: every capture that runs a confined browser, and
 * device logins (no browser, but their polling shares the same concurrency cap).
 */
export function needsBrowser(service: Service): boolean {
  const capture = service.entry.capture;
  return capture.strategy !== "paste" || Boolean(capture.startUrl);
}

/** What the registry calls when a flow's deadline or grace period runs out. */
export interface FlowTimers {
  onTimeout(f: Flow): void;
  /** Nobody claimed the flow within the grace period (its page never connected, or its socket closed). */
  onAbandoned(f: Flow): void;
}

/** The registry's limits and time source. */
export interface FlowRegistrySettings {
  readonly maxConcurrent: number;
  /** Slots one team may hold (SLAUDE_LOGIN_MAX_CONCURRENT_PER_TEAM); unset: all of them. */
  readonly maxPerTeam?: number;
  /** Told of each refusal by the per-team cap (the limit refusals metric). */
  readonly refused?: LimitRefusals;
  readonly graceMs: number;
  /** Arms the flow deadlines and grace periods (tests advance a ManualClock). */
  readonly clock: Clock;
  readonly timers: FlowTimers;
}

/** A flow's deadline is never closer than this, so a flow resumed just before its expiry still gets a moment. */
const MIN_DEADLINE_MS = 1_000;

/**
 * The running flows and their browser slots: a slot is taken when a link is first loaded, before
 * any await, and given back only once the flow's browser is gone; one viewer socket per flow.
 */
export class FlowRegistry {
  private readonly flows = new Map<string, Flow>();
  private held = 0;
  private closed = false;
  /** Slots per team: one team's logins cannot hold every browser. */
  readonly perTeam: TenantCounter;

  constructor(private readonly opts: FlowRegistrySettings) {
    this.perTeam = new TenantCounter(Math.max(1, Math.min(opts.maxPerTeam ?? opts.maxConcurrent, opts.maxConcurrent)));
  }

  /** The running flow of session `id`. */
  get(id: string): Flow | undefined {
    return this.flows.get(id);
  }

  /** Every running flow. */
  all(): Flow[] {
    return [...this.flows.values()];
  }

  /** Flows in progress (a link opened, not yet ended). */
  get size(): number {
    return this.flows.size;
  }

  /** Flows with a live browser. */
  get activeBrowsers(): number {
    let n = 0;
    for (const f of this.flows.values()) if (f.browser) n++;
    return n;
  }

  /** Slots held (never above maxConcurrent). */
  get slotsInUse(): number {
    return this.held;
  }

  /** A slot for a flow of `service` in `teamId`: true when taken, false when the flow needs none, "full" when none is left for the deployment or the team (or the registry is closed). */
  takeSlot(service: Service, teamId: string): boolean | "full" {
    if (!needsBrowser(service)) return false;
    if (this.closed || this.held >= this.opts.maxConcurrent) return "full";
    if (!this.perTeam.tryAcquire(teamId)) {
      this.opts.refused?.("logins");
      return "full";
    }
    this.held++;
    return true;
  }

  /** Gives back a slot taken for a flow of `teamId` that was never started. */
  returnSlot(teamId: string): void {
    this.held--;
    this.perTeam.release(teamId);
  }

  /** Refuses every later slot (shutdown). */
  close(): void {
    this.closed = true;
  }

  /** Starts the flow of `session` with its deadline, and the grace period for its first socket. */
  start(session: LoginSession, service: Service, holdsSlot: boolean): Flow {
    const f: Flow = {
      session,
      service,
      holdsSlot,
      browser: undefined,
      launch: undefined,
      viewer: undefined,
      send: undefined,
      timer: undefined,
      graceTimer: undefined,
      poll: undefined,
      oauth: undefined,
      ended: false,
    };
    this.flows.set(session.id, f);
    const clock = this.opts.clock;
    f.timer = clock.setTimeout(
      () => this.opts.timers.onTimeout(f),
      Math.max(MIN_DEADLINE_MS, session.expiresAt - clock.now()),
      { unref: true },
    );
    this.armGrace(f);
    return f;
  }

  private armGrace(f: Flow): void {
    f.graceTimer?.cancel();
    f.graceTimer = this.opts.clock.setTimeout(() => this.opts.timers.onAbandoned(f), this.opts.graceMs, {
      unref: true,
    });
  }

  /** Makes a socket the flow's one viewer; refused while another socket is live or when the flow is not running. */
  claim(sessionId: string): Viewer | ClaimRefusal {
    const f = this.flows.get(sessionId);
    if (!f || f.ended) return "gone";
    if (f.viewer) return "busy";
    const viewer: Viewer = { sessionId };
    f.viewer = viewer;
    f.graceTimer?.cancel();
    f.graceTimer = undefined;
    return viewer;
  }

  /** The running flow `viewer` drives, if it is still that flow's viewer. */
  flowOf(viewer: Viewer): Flow | undefined {
    const f = this.flows.get(viewer.sessionId);
    return f && !f.ended && f.viewer === viewer ? f : undefined;
  }

  /** The viewer's socket closed: the flow is unwatched again and its grace period starts. */
  detach(viewer: Viewer): void {
    const f = this.flows.get(viewer.sessionId);
    if (!f || f.viewer !== viewer) return;
    f.viewer = undefined;
    f.send = undefined;
    if (!f.ended) this.armGrace(f);
  }

  /** Forgets an ended flow and stops its timers (its browser is the caller's to close). */
  remove(f: Flow): void {
    f.timer?.cancel();
    f.graceTimer?.cancel();
    f.poll?.cancel();
    f.viewer = undefined;
    this.flows.delete(f.session.id);
  }

  /** Gives back an ended flow's slot once its browser is gone; one still starting is closed by its launch first. */
  release(f: Flow): void {
    if (!f.holdsSlot) return;
    f.holdsSlot = false;
    const give = (): void => {
      this.held--;
      this.perTeam.release(f.session.teamId);
    };
    if (f.launch) void f.launch.finally(give);
    else give();
  }
}
