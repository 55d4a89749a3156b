// How a login flow ends: completed (the credential stored for the user the link was minted for,
// the owner told), or cancelled, expired or failed (nothing stored). Either way the flow leaves the
// registry, its browser is closed and its slot given back, and the end is recorded and audited.

import type { Clock } from "../clock/clock.js";
import type { ConnectionLifecycle } from "../connections/lifecycle.js";
import { errorMessage, errorName } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";
import type { Connection } from "../store/records.js";
import type { Store } from "../store/store.js";
import type { CredentialInput } from "../vault/credential.js";
import type { Flow, FlowRegistry } from "./flow-registry.js";
import type { LoginBrowser, LoginNotifier } from "./ports.js";

/** An unsuccessful end, as recorded on the login session. */
export type FlowEnd = "cancelled" | "expired" | "failed";

/** What ending a flow touches. */
export interface OutcomeDeps {
  readonly store: Store;
  readonly lifecycle: ConnectionLifecycle;
  readonly clock: Clock;
  readonly log: Logger;
  readonly flows: FlowRegistry;
  readonly notifier?: LoginNotifier;
}

/** Ends flows; every method is idempotent per flow and never rejects. */
export class FlowOutcomes {
  constructor(private readonly deps: OutcomeDeps) {}

  /** Stores the credential for the user the link was minted for, then ends the flow. */
  async complete(f: Flow, credential: CredentialInput): Promise<void> {
    if (f.ended) return;
    const { store, log } = this.deps;
    const s = f.session;
    const current = await store.loginSessions.get(s.id);
    if (current?.status !== "opened") {
      await this.end(f, "failed", "This login is no longer valid.");
      return;
    }
    f.ended = true;
    let connection: Connection;
    try {
      connection = await this.deps.lifecycle.create({
        teamId: s.teamId,
        ownerUserId: s.scope === "shared" ? null : s.userId,
        service: s.service,
        scope: s.scope,
        channelId: s.channelId,
        threadTs: s.threadTs,
        credential,
        createdBy: s.userId,
      });
    } catch (err) {
      log.warn("captured credential could not be stored", { sessionId: s.id, error: errorName(err) });
      f.ended = false;
      await this.end(f, "failed", "The captured credential could not be stored.");
      return;
    }
    const now = this.deps.clock.now();
    await store.loginSessions
      .end(s.id, "completed", now, connection.id, [
        {
          at: now,
          event: "login_completed",
          teamId: s.teamId,
          channelId: s.channelId,
          threadTs: s.threadTs,
          callerUserId: s.userId,
          ownerUserId: connection.ownerUserId,
          connectionId: connection.id,
          service: s.service,
          decision: f.service.entry.capture.strategy,
        },
      ])
      .catch((err: unknown) =>
        log.warn("login completion could not be recorded", { sessionId: s.id, error: errorMessage(err) }),
      );
    f.send?.({
      type: "status",
      state: "captured",
      message: `Connected. Your ${f.service.displayName} credential is stored encrypted; you can close this page.`,
    });
    await this.teardown(f);
    try {
      await this.deps.notifier?.connectionReady(s, connection, f.service);
    } catch (err) {
      log.warn("could not tell the owner their connection is ready", { sessionId: s.id, error: errorMessage(err) });
    }
  }

  /** Ends the flow and kills its browser (a failed status write is logged, the browser dies anyway). */
  async end(f: Flow, status: FlowEnd, message: string, decision: string = status): Promise<void> {
    if (f.ended) return;
    f.ended = true;
    const now = this.deps.clock.now();
    try {
      await this.deps.store.loginSessions.end(f.session.id, status, now, null, [
        {
          at: now,
          event: "login_refused",
          teamId: f.session.teamId,
          callerUserId: f.session.userId,
          service: f.session.service,
          decision,
        },
      ]);
    } catch (err) {
      this.deps.log.warn("login end could not be recorded", { sessionId: f.session.id, error: errorMessage(err) });
    }
    f.send?.({ type: "status", state: status, message });
    await this.teardown(f);
  }

  /** Closes a browser, logging (not throwing) a failure. */
  async closeBrowser(b: LoginBrowser): Promise<void> {
    await b
      .close()
      .catch((err: unknown) => this.deps.log.warn("login browser close failed", { error: errorMessage(err) }));
  }

  private async teardown(f: Flow): Promise<void> {
    this.deps.flows.remove(f);
    const b = f.browser;
    f.browser = undefined;
    if (b) await this.closeBrowser(b);
    this.deps.flows.release(f);
  }
}
