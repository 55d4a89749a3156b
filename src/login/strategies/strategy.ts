// The seam between a login flow and its capture strategy (paste, cookie, oauth, device; one file each):
// the flow owns sockets, slots, the browser's life and storage; a strategy decides what to show,
// which page the browser opens, and when it holds a credential.
import type { Clock } from "../../clock/clock.js";
import type { Logger } from "../../log/logger.js";
import type { CredentialInput } from "../../vault/credential.js";
import type { Flow } from "../flow-registry.js";

/** A CSS viewport the viewer's page asked for. */
export interface Viewport {
  readonly width: number;
  readonly height: number;
}

/** What a strategy may do to its flow (implemented by LoginService). */
export interface FlowControl {
  /** Starts the flow's one confined browser on `startUrl`; throws when it cannot start. */
  startBrowser(
    f: Flow,
    startUrl: string,
    viewport: Viewport,
    intercept?: { prefix: string; onHit(url: string): void },
  ): Promise<void>;
  /** Stores `credential` for the user the link was minted for, then ends the flow. Never rejects. */
  complete(f: Flow, credential: CredentialInput): Promise<void>;
  /** Ends the flow as failed with `message` for the viewer; `decision` names why in the audit row. Never rejects. */
  fail(f: Flow, message: string, decision?: string): Promise<void>;
  /** Runs work started by a timer or a browser callback: a failure is logged, never an unhandled rejection. */
  background(what: string, p: Promise<void>): void;
  readonly clock: Clock;
  readonly log: Logger;
}

/** How one kind of credential is captured. */
export interface CaptureStrategy {
  /**
   * Whether the browser is the sign-in itself (cookie, oauth): its progress is reported to the
   * viewer and a browser that cannot start fails the flow. For paste it is only a reference page.
   */
  readonly browserSignsIn: boolean;
  /** What a newly attached viewer is shown before any browser (the paste form). */
  greet(f: Flow): void;
  /** Starts the flow's browser side, once per flow; throws when it cannot. */
  start(f: Flow, viewport: Viewport): Promise<void>;
  /** The viewer submitted the paste form. */
  paste(f: Flow, fields: Record<string, string>): Promise<void>;
  /** The viewer pressed Done. */
  done(f: Flow): Promise<void>;
}
