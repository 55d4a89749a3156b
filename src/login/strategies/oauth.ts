// The oauth strategy: the authorization request runs inside the confined browser; the redirect to
// the broker's callback is intercepted there and turned into tokens by the OAuthFlowFactory port
// (src/login/oauth builds it).
import { errorName } from "../../domain/errors.js";
import type { Flow } from "../flow-registry.js";
import type { OAuthFlowFactory } from "../ports.js";
import type { CaptureStrategy, FlowControl, Viewport } from "./strategy.js";

/** Captures OAuth tokens through an authorization code flow in the confined browser. */
export class OAuthStrategy implements CaptureStrategy {
  readonly browserSignsIn = true;

  /** `flows` is absent on a broker without OAuth: starting then fails the flow. */
  constructor(
    private readonly run: FlowControl,
    private readonly flows: OAuthFlowFactory | undefined,
  ) {}

  greet(): void {}

  async start(f: Flow, viewport: Viewport): Promise<void> {
    if (!this.flows) throw new Error("oauth is not configured on this broker");
    const oauth = await this.flows(f.service, f.session);
    f.oauth = oauth;
    await this.run.startBrowser(f, oauth.authorizeUrl, viewport, {
      prefix: oauth.redirectPrefix,
      onHit: (url) => this.run.background("oauth completion", this.complete(f, url)),
    });
  }

  async paste(): Promise<void> {}

  async done(): Promise<void> {}

  private async complete(f: Flow, url: string): Promise<void> {
    if (!f.oauth || f.ended) return;
    try {
      await this.run.complete(f, await f.oauth.complete(url));
    } catch (err) {
      this.run.log.warn("oauth completion failed", { sessionId: f.session.id, error: errorName(err) });
      await this.run.fail(f, "Signing in did not complete. Ask for a new link with /connect.");
    }
  }
}
