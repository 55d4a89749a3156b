// The steps of opening a login, published on a diagnostics channel so a bench (or an operator's
// profiler) can time them: nothing is recorded, kept or logged unless something subscribes, and a
// step carries only its name and the session it belongs to (never a URL, a cookie or a frame).
import { channel } from "node:diagnostics_channel";
import { performance } from "node:perf_hooks";

/** The channel name; subscribe with `diagnostics_channel.subscribe(LOGIN_TRACE, fn)`. */
export const LOGIN_TRACE = "slaude:login-open";

/** The steps from a link's load to the first frame of its login page, in the order they happen. */
export const LOGIN_STEPS = [
  "page_served",
  "socket_open",
  "flow_bound",
  "browser_requested",
  "spare_taken",
  "context_created",
  "page_created",
  "confined",
  "navigation_committed",
  "dom_content_loaded",
  "screencast_started",
  "first_frame_sent",
  "refill_started",
] as const;
export type LoginStep = (typeof LOGIN_STEPS)[number];

/** What a subscriber receives: the step, its `performance.now()` and the flow's session id when known. */
export interface LoginTraceEvent {
  readonly step: LoginStep;
  readonly at: number;
  readonly sessionId?: string;
}

const ch = channel(LOGIN_TRACE);

/** Publishes one step (a no-op without subscribers). */
export function traceLogin(step: LoginStep, sessionId?: string): void {
  if (!ch.hasSubscribers) return;
  const e: LoginTraceEvent = sessionId ? { step, at: performance.now(), sessionId } : { step, at: performance.now() };
  ch.publish(e);
}
