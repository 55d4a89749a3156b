import type { AuditEvent } from "../audit/event.js";
import type { Clock } from "../clock/clock.js";
import type { Service, ServiceRegistry } from "../config/registry.js";
import { newId } from "../domain/ids.js";
import type { ConnectionLifecycle } from "../connections/lifecycle.js";
import type { Logger } from "../log/logger.js";
import type { Connection, ConnectionScope, LoginSession } from "../store/records.js";
import type { Store } from "../store/store.js";
import type { CredentialInput } from "../vault/credential.js";
import type { KeyRing } from "../vault/keyring.js";
import { cookieCredential, pastedCredential } from "./capture.js";
import { FlowTable, needsBrowser, type ClaimRefusal, type Flow, type Viewer } from "./flow.js";
import { isTokenShaped, newLinkToken, newViewerSecret, secretHash } from "./links.js";
import type { LoginBrowser, LoginBrowserFactory, LoginNotifier, OAuthFlowFactory } from "./ports.js";
import type { ClientMessage, ServerMessage } from "./protocol.js";
import { LoginError } from "./errors.js";

// The ports live in ports.ts; re-exported so callers keep importing them from here.
export type { LoginBrowser, LoginBrowserFactory, LoginBrowserRequest, LoginNotifier, OAuthFlow, OAuthFlowFactory } from "./ports.js";

/** Why opening a link was refused ("ended": the same viewer comes back to a flow that is over). */
export type OpenRefusal = "invalid" | "used" | "expired" | "full" | "ended";

/** Settings of the login service. */
export interface LoginSettings {
  readonly publicUrl: string;
  readonly linkTtlMs: number;
  readonly flowTimeoutMs: number;
  /** Browser slots: flows that need a browser, counted from the link's first load until they end. */
  readonly maxConcurrent: number;
  /** How long a flow waits, with no socket attached, before it ends and its browser is killed. */
  readonly detachGraceMs: number;
}

/**
 * Login flows: mints one-time links bound to a Slack user, lets exactly one browser open each,
 * drives the confined browser and the capture strategy, and stores the credential for the user
 * the link was minted for, and only from the browser that opened it. At most `maxConcurrent`
 * flows that need a browser run at once, each with at most one browser and one live socket.
 */
export class LoginService {
  private readonly table: FlowTable;
  private readonly launches = new Set<Promise<void>>();

  constructor(
    private readonly deps: {
      store: Store;
      keys: KeyRing;
      registry: ServiceRegistry;
      lifecycle: ConnectionLifecycle;
      clock: Clock;
      log: Logger;
      browsers: LoginBrowserFactory;
      notifier?: LoginNotifier;
      oauth?: OAuthFlowFactory;
      settings: LoginSettings;
    },
  ) {
    this.table = new FlowTable({
      maxConcurrent: deps.settings.maxConcurrent,
      graceMs: deps.settings.detachGraceMs,
      now: () => deps.clock.now(),
      timers: {
        onTimeout: (f) => void this.end(f, "expired", "The login timed out. Ask for a new link with /connect."),
        onAbandoned: (f) => void this.end(f, "expired", "Nobody was watching this login, so it was stopped. Ask for a new link with /connect.", "abandoned"),
      },
    });
  }

  /** Number of login flows in progress (a link opened in a browser, not yet ended). */
  get activeFlows(): number {
    return this.table.size;
  }

  /** Number of flows with a live browser. */
  get activeBrowsers(): number {
    return this.table.activeBrowsers;
  }

  /** Browser slots held (never above `maxConcurrent`). */
  get slotsInUse(): number {
    return this.table.slotsInUse;
  }

  /**
   * Mints a one-time link for `userId`; the returned URL is a bearer secret for that user only.
   * Throws LoginError when the service or the scope does not allow it.
   */
  async mint(m: { teamId: string; userId: string; service: string; scope?: ConnectionScope; channelId: string | null; threadTs: string | null }): Promise<{ url: string; expiresAt: number; sessionId: string }> {
    const service = this.deps.registry.get(m.service);
    if (!service) throw new LoginError("unknown_service", `unknown service ${m.service}`);
    const scope = m.scope ?? (m.channelId && m.threadTs ? "thread" : "user");
    if (!service.entry.scopes.includes(scope)) throw new LoginError("scope_not_allowed", `service ${m.service} does not allow scope ${scope}`);
    // Refuse now rather than after the user has signed in: a thread connection needs its thread.
    if (scope === "thread" && (!m.channelId || !m.threadTs)) throw new LoginError("needs_thread", `a thread-scoped ${m.service} connection needs a thread`);
    const token = newLinkToken();
    const now = this.deps.clock.now();
    const id = newId("login");
    const expiresAt = now + this.deps.settings.linkTtlMs;
    await this.deps.store.loginSessions.create(
      { id, tokenHash: secretHash(this.deps.keys, token), teamId: m.teamId, userId: m.userId, service: m.service, scope, channelId: scope === "thread" ? m.channelId : null, threadTs: scope === "thread" ? m.threadTs : null, createdAt: now, expiresAt },
      [{ at: now, event: "login_started", teamId: m.teamId, channelId: m.channelId, threadTs: m.threadTs, callerUserId: m.userId, service: m.service, decision: "link_minted" }],
    );
    return { url: `${this.deps.settings.publicUrl}/login/l/${token}`, expiresAt, sessionId: id };
  }

  /**
   * Opens a link: the first browser consumes it, starts the flow (reserving its browser slot) and
   * receives a viewer secret (a cookie); the same viewer may reload; anyone else is refused and audited.
   */
  async open(token: string, viewerSecret: string | undefined): Promise<{ session: LoginSession; viewerSecret: string } | { refused: OpenRefusal }> {
    if (!isTokenShaped(token)) return { refused: "invalid" };
    const hash = secretHash(this.deps.keys, token);
    const now = this.deps.clock.now();
    const existing = await this.deps.store.loginSessions.getByTokenHash(hash);
    if (!existing) return { refused: "invalid" };
    const service = this.deps.registry.get(existing.service);
    if (!service) return { refused: "invalid" };
    const audit = (decision: string): AuditEvent => ({ at: now, event: "login_refused", teamId: existing.teamId, callerUserId: existing.userId, service: existing.service, decision });
    const sameViewer = viewerSecret !== undefined && existing.viewerHash === secretHash(this.deps.keys, viewerSecret);
    if (existing.status === "opened" && sameViewer && existing.expiresAt > now) {
      if (this.table.get(existing.id)) return { session: existing, viewerSecret };
      // The flow is not running here (the broker restarted): it starts again and needs a slot again.
      const slot = this.table.takeSlot(service);
      if (slot === "full") return { refused: "full" };
      this.table.start(existing, service, slot);
      return { session: existing, viewerSecret };
    }
    if (sameViewer && existing.status !== "minted") return { refused: "ended" };
    if (existing.status !== "minted") {
      await this.deps.store.audit.append([audit(existing.status === "opened" ? "second_viewer" : "link_reused")]);
      return { refused: "used" };
    }
    if (existing.expiresAt <= now) {
      await this.deps.store.audit.append([audit("link_expired")]);
      return { refused: "expired" };
    }
    // The slot is taken before the link is consumed (a full broker does not burn the link) and
    // before the first await, so concurrent loads cannot all pass the check.
    const slot = this.table.takeSlot(service);
    if (slot === "full") return { refused: "full" };
    let session: LoginSession | undefined;
    const secret = newViewerSecret();
    try {
      session = await this.deps.store.loginSessions.open(hash, secretHash(this.deps.keys, secret), now, now + this.deps.settings.flowTimeoutMs, [
        { at: now, event: "login_started", teamId: existing.teamId, callerUserId: existing.userId, service: existing.service, decision: "link_opened" },
      ]);
    } finally {
      if (!session && slot) this.table.returnSlot();
    }
    if (!session) {
      await this.deps.store.audit.append([audit("second_viewer")]);
      return { refused: "used" };
    }
    this.table.start(session, service, slot);
    return { session, viewerSecret: secret };
  }

  /** Whether `viewerSecret` is the one that opened session `id`. */
  async viewerMatches(id: string, viewerSecret: string | undefined): Promise<LoginSession | undefined> {
    if (!viewerSecret) return undefined;
    const s = await this.deps.store.loginSessions.get(id);
    if (!s || s.status !== "opened" || s.viewerHash !== secretHash(this.deps.keys, viewerSecret)) return undefined;
    return s;
  }

  /** Makes a socket the flow's one viewer; refused while another socket is live or when the flow is not running. */
  claim(sessionId: string): Viewer | ClaimRefusal {
    return this.table.claim(sessionId);
  }

  /** Attaches the viewer's socket to its flow, starting the flow's one browser if it has none. Never rejects. */
  async attach(viewer: Viewer, send: (m: ServerMessage) => void, viewport: { width: number; height: number }): Promise<void> {
    const f = this.table.flowOf(viewer);
    if (!f) {
      send({ type: "status", state: "failed", message: "This login is no longer running. Ask for a new link with /connect." });
      return;
    }
    f.send = send;
    const capture = f.service.entry.capture;
    send({ type: "strategy", strategy: capture.strategy, service: f.service.displayName, browser: needsBrowser(f.service) });
    if (capture.strategy === "paste") {
      send({ type: "paste_form", instructions: capture.instructions, fields: capture.fields.map((x) => ({ name: x.name, label: x.label, secret: x.secret })) });
      send({ type: "status", state: "waiting", message: "Paste your token below. It goes straight into encrypted storage." });
    }
    if (!needsBrowser(f.service)) return;
    if (f.browser) {
      if (capture.strategy !== "paste") send({ type: "status", state: "waiting", message: "Waiting for you to sign in." });
      return;
    }
    if (!f.launch) {
      const launch = this.launch(f, viewport);
      f.launch = launch;
      this.launches.add(launch);
      void launch.finally(() => this.launches.delete(launch));
    } else if (capture.strategy !== "paste") {
      send({ type: "status", state: "loading", message: "Opening the sign-in page…" });
    }
    await f.launch;
  }

  /** The flow's one browser start; every failure is handled here (the flow fails, or a paste flow goes on without it). */
  private async launch(f: Flow, viewport: { width: number; height: number }): Promise<void> {
    const capture = f.service.entry.capture;
    try {
      if (capture.strategy === "paste") {
        if (capture.startUrl) await this.startBrowser(f, capture.startUrl, viewport);
        return;
      }
      f.send?.({ type: "status", state: "loading", message: "Opening the sign-in page…" });
      if (capture.strategy === "oauth") {
        if (!this.deps.oauth) throw new Error("oauth is not configured on this broker");
        const oauth = await this.deps.oauth(f.service, f.session);
        f.oauth = oauth;
        await this.startBrowser(f, oauth.authorizeUrl, viewport, { prefix: oauth.redirectPrefix, onHit: (url) => this.background("oauth completion", this.completeOAuth(f, url)) });
      } else {
        await this.startBrowser(f, capture.startUrl, viewport);
        f.cookiePoll = setInterval(() => this.background("cookie check", this.checkCookies(f, false)), 500);
        f.cookiePoll.unref();
      }
      if (!f.ended) f.send?.({ type: "status", state: "waiting", message: "Waiting for you to sign in." });
    } catch (err) {
      this.deps.log.warn("login browser failed to start", { sessionId: f.session.id, error: (err as Error).message });
      if (capture.strategy === "paste") {
        // The token page is only a convenience: the paste form still works without it.
        f.send?.({ type: "status", state: "waiting", message: "The token page could not be shown here; open it in your own browser, then paste your token below." });
      } else {
        await this.end(f, "failed", "The sign-in page could not be opened. Try again later.");
      }
    }
  }

  private async startBrowser(f: Flow, startUrl: string, viewport: { width: number; height: number }, intercept?: { prefix: string; onHit(url: string): void }): Promise<void> {
    const allowed = f.service.entry.loginDomains.length ? f.service.entry.loginDomains : [new URL(startUrl).host];
    const browser = await this.deps.browsers({
      startUrl,
      allowedHosts: allowed,
      viewport,
      onFrame: (fr) => f.send?.({ type: "frame", data: fr.data.toString("base64"), width: fr.width, height: fr.height, popup: fr.popup }),
      onBlockedNavigation: (url) => {
        this.deps.log.info("login navigation blocked", { sessionId: f.session.id, host: safeHost(url) });
      },
      ...(intercept ? { intercept } : {}),
    });
    // The flow ended while Chromium started: this browser dies here, with it.
    if (f.ended) await this.closeBrowser(browser);
    else f.browser = browser;
  }

  /** Handles one validated message from the flow's viewer; messages from any other socket are dropped. */
  async input(viewer: Viewer, m: ClientMessage): Promise<void> {
    const f = this.table.flowOf(viewer);
    if (!f) return;
    const b = f.browser;
    switch (m.type) {
      case "mouse":
        await b?.mouse({ type: m.kind, x: m.x, y: m.y, ...(m.button ? { button: m.button } : {}), ...(m.clickCount ? { clickCount: m.clickCount } : {}) });
        return;
      case "wheel":
        await b?.wheel({ x: m.x, y: m.y, deltaX: m.deltaX, deltaY: m.deltaY });
        return;
      case "key":
        await b?.key({ type: m.kind, key: m.key });
        return;
      case "text":
        await b?.text(m.text);
        return;
      case "paste": {
        const pasted = pastedCredential(f.service, m.fields);
        if (pasted && "problem" in pasted) f.send?.({ type: "status", state: "waiting", message: pasted.problem });
        else if (pasted) await this.store(f, pasted.credential);
        return;
      }
      case "done":
        if (f.service.entry.capture.strategy === "cookie") await this.checkCookies(f, true);
        return;
      case "cancel":
        await this.end(f, "cancelled", "Cancelled. Nothing was stored.");
        return;
      case "viewport":
        return;
    }
  }

  private async checkCookies(f: Flow, userSaidDone: boolean): Promise<void> {
    if (!f.browser || f.ended) return;
    const credential = cookieCredential(f.service, await f.browser.cookies().catch(() => []));
    if (credential) await this.store(f, credential);
    else if (userSaidDone) f.send?.({ type: "status", state: "waiting", message: "Not signed in yet: finish signing in, then press Done." });
  }

  private async completeOAuth(f: Flow, url: string): Promise<void> {
    if (!f.oauth || f.ended) return;
    try {
      await this.store(f, await f.oauth.complete(url));
    } catch (err) {
      this.deps.log.warn("oauth completion failed", { sessionId: f.session.id, error: (err as Error).name });
      await this.end(f, "failed", "Signing in did not complete. Ask for a new link with /connect.");
    }
  }

  /** Stores the credential for the user the link was minted for, then ends the flow. */
  private async store(f: Flow, credential: CredentialInput): Promise<void> {
    if (f.ended) return;
    const s = f.session;
    const current = await this.deps.store.loginSessions.get(s.id);
    if (!current || current.status !== "opened") {
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
      this.deps.log.warn("captured credential could not be stored", { sessionId: s.id, error: (err as Error).name });
      f.ended = false;
      await this.end(f, "failed", "The captured credential could not be stored.");
      return;
    }
    const now = this.deps.clock.now();
    await this.deps.store.loginSessions.end(s.id, "completed", now, connection.id, [
      { at: now, event: "login_completed", teamId: s.teamId, channelId: s.channelId, threadTs: s.threadTs, callerUserId: s.userId, ownerUserId: connection.ownerUserId, connectionId: connection.id, service: s.service, decision: f.service.entry.capture.strategy },
    ]).catch((err: unknown) => this.deps.log.warn("login completion could not be recorded", { sessionId: s.id, error: (err as Error).message }));
    f.send?.({ type: "status", state: "captured", message: `Connected. Your ${f.service.displayName} credential is stored encrypted; you can close this page.` });
    await this.teardown(f);
    try {
      await this.deps.notifier?.connectionReady(s, connection, f.service);
    } catch (err) {
      this.deps.log.warn("could not tell the owner their connection is ready", { sessionId: s.id, error: (err as Error).message });
    }
  }

  /** Ends the flow and kills its browser; never rejects (a failed status write is logged, the browser dies anyway). */
  private async end(f: Flow, status: "cancelled" | "expired" | "failed", message: string, decision: string = status): Promise<void> {
    if (f.ended) return;
    f.ended = true;
    const now = this.deps.clock.now();
    try {
      await this.deps.store.loginSessions.end(f.session.id, status, now, null, [
        { at: now, event: "login_refused", teamId: f.session.teamId, callerUserId: f.session.userId, service: f.session.service, decision },
      ]);
    } catch (err) {
      this.deps.log.warn("login end could not be recorded", { sessionId: f.session.id, error: (err as Error).message });
    }
    f.send?.({ type: "status", state: status, message });
    await this.teardown(f);
  }

  private async teardown(f: Flow): Promise<void> {
    this.table.remove(f);
    const b = f.browser;
    f.browser = undefined;
    if (b) await this.closeBrowser(b);
    this.table.release(f);
  }

  private async closeBrowser(b: LoginBrowser): Promise<void> {
    await b.close().catch((err: unknown) => this.deps.log.warn("login browser close failed", { error: (err as Error).message }));
  }

  /** Runs work started by a timer or a browser callback: a failure is logged, never an unhandled rejection. */
  private background(what: string, p: Promise<void>): void {
    p.catch((err: unknown) => this.deps.log.warn(`login ${what} failed`, { error: (err as Error).message }));
  }

  /** The viewer's socket closed: the flow waits the grace period for a reload, then ends and kills its browser. */
  detach(viewer: Viewer): void {
    this.table.detach(viewer);
  }

  /** Expires unopened links past their TTL. */
  async reap(): Promise<number> {
    return (await this.deps.store.loginSessions.expireDue(this.deps.clock.now())).length;
  }

  /** Ends every flow and waits until every browser, those still starting included, is closed (shutdown). */
  async shutdown(): Promise<void> {
    this.table.close();
    await Promise.all(this.table.all().map((f) => this.end(f, "cancelled", "The broker is shutting down.")));
    await Promise.all([...this.launches]);
  }
}

function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "(invalid)";
  }
}
