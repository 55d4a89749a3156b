// The device strategy (RFC 8628), for services that refuse an embedded browser: no browser starts;
// the private live-view page shows the verification URL and user code, the user signs in on any
// device of theirs, and the broker polls the token endpoint on the Clock (interval, slow_down +5 s,
// authorization_pending, expired_token, access_denied), then stores the tokens like oauth does.
import { errorName } from "../../domain/errors.js";
import type { Flow } from "../flow-registry.js";
import type { DeviceGrant, DeviceGrantFactory } from "../ports.js";
import type { ServerMessage } from "../protocol.js";
import type { CaptureStrategy, FlowControl } from "./strategy.js";

/** RFC 8628 §3.5: each slow_down adds 5 seconds to the polling interval. */
export const SLOW_DOWN_STEP_MS = 5_000;

/** The polling interval is never widened past this (a misbehaving server cannot park the flow). */
const MAX_INTERVAL_MS = 120_000;

/** The flow's end message for each way a device login fails (no code or token in any of them). */
function failureMessage(code: string | undefined): string {
  switch (code) {
    case "access_denied":
      return "Sign-in was declined on the service's page. Nothing was stored. Ask for a new link with /connect.";
    case "expired_token":
      return "The sign-in code expired before it was used. Nothing was stored. Ask for a new link with /connect.";
    default:
      return "Signing in did not complete. Nothing was stored. Ask for a new link with /connect.";
  }
}

/** Captures OAuth tokens through the device authorization grant; the credential is an oauth one. */
export class DeviceStrategy implements CaptureStrategy {
  /** No browser runs, but the login cannot go on without its code: a failed start fails the flow. */
  readonly browserSignsIn = true;
  /** The code shown on each flow's page, so a reloaded page shows it again. Entries leave with their flow. */
  private readonly shown = new WeakMap<Flow, ServerMessage>();

  /** `grants` is absent on a broker without device login: starting then fails the flow. */
  constructor(
    private readonly run: FlowControl,
    private readonly grants: DeviceGrantFactory | undefined,
  ) {}

  greet(f: Flow): void {
    const m = this.shown.get(f);
    if (m) f.send?.(m);
  }

  async start(f: Flow): Promise<void> {
    if (!this.grants) throw new Error("device login is not configured on this broker");
    const grant = await this.grants(f.service);
    if (f.ended) return;
    const m: ServerMessage = {
      type: "device_code",
      verificationUri: grant.verificationUri,
      ...(grant.verificationUriComplete ? { verificationUriComplete: grant.verificationUriComplete } : {}),
      userCode: grant.userCode,
    };
    this.shown.set(f, m);
    f.send?.(m);
    this.run.background("device polling", this.pollUntilDone(f, grant));
  }

  async paste(): Promise<void> {}

  async done(): Promise<void> {}

  /**
   * Polls until tokens, a terminal error, the code's expiry or the flow's end. Each wait is the
   * flow's `poll` timer (unref'd, cancelled when the flow is removed), armed on the Clock.
   */
  private async pollUntilDone(f: Flow, grant: DeviceGrant): Promise<void> {
    const { clock, log } = this.run;
    let interval = grant.intervalMs;
    for (;;) {
      await new Promise<void>((resolve) => {
        f.poll = clock.setTimeout(resolve, interval, { unref: true });
      });
      f.poll = undefined;
      if (f.ended) return;
      if (clock.now() >= grant.expiresAt) {
        await this.end(f, "expired_token");
        return;
      }
      let r: Awaited<ReturnType<DeviceGrant["poll"]>>;
      try {
        r = await grant.poll();
      } catch (err) {
        const code = (err as { code?: string }).code;
        // An OAuthError's fields name the host, status and standard error only.
        log.warn("device login poll failed", { sessionId: f.session.id, error: errorName(err), code });
        // Transient: keep polling at the same pace until the code expires.
        if (code === "network" || code === "server_error") continue;
        await this.end(f, code);
        return;
      }
      if (f.ended) return;
      if (r === "pending") continue;
      if (r === "slow_down") {
        interval = Math.min(MAX_INTERVAL_MS, interval + SLOW_DOWN_STEP_MS);
        continue;
      }
      await this.run.complete(f, r.tokens);
      return;
    }
  }

  private async end(f: Flow, code: string | undefined): Promise<void> {
    this.shown.delete(f);
    await this.run.fail(
      f,
      failureMessage(code),
      code === "access_denied" || code === "expired_token" ? `device_${code}` : "failed",
    );
  }
}
