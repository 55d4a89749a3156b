import type { AuditEvent } from "../audit/event.js";
import type { Clock } from "../clock/clock.js";
import type { Service, ServiceRegistry } from "../config/registry.js";
import { newId } from "../connections/ids.js";
import type { ConnectionLifecycle } from "../connections/lifecycle.js";
import type { Logger } from "../log/logger.js";
import type { Connection, ConnectionScope, LoginSession } from "../store/records.js";
import type { Store } from "../store/store.js";
import type { CredentialInput } from "../vault/credential.js";
import type { KeyRing } from "../vault/keyring.js";
import { isTokenShaped, newLinkToken, newViewerSecret, secretHash } from "./links.js";
import type { ClientMessage, ServerMessage } from "./protocol.js";

/** The part of the confined browser the login flow drives (src/login/browser). */
export interface LoginBrowser {
  mouse(e: { type: "move" | "down" | "up"; x: number; y: number; button?: "left" | "right" | "middle"; clickCount?: number }): Promise<void>;
  wheel(e: { x: number; y: number; deltaX: number; deltaY: number }): Promise<void>;
  key(e: { type: "down" | "up"; key: string }): Promise<void>;
  text(s: string): Promise<void>;
  cookies(): Promise<{ name: string; value: string; domain: string; path: string; expires?: number; httpOnly?: boolean; secure?: boolean; sameSite?: "Strict" | "Lax" | "None" }[]>;
  close(): Promise<void>;
}

/** Options the flow gives the browser factory. */
export interface LoginBrowserRequest {
  readonly startUrl: string;
  readonly allowedHosts: readonly string[];
  readonly viewport: { width: number; height: number };
  readonly onFrame: (f: { data: Buffer; width: number; height: number; popup: boolean }) => void;
  readonly onBlockedNavigation: (url: string) => void;
  readonly intercept?: { prefix: string; onHit(url: string): void };
}

/** Launches confined browsers (the port to Chromium). */
export type LoginBrowserFactory = (req: LoginBrowserRequest) => Promise<LoginBrowser>;

/** Tells a user their connection is ready (Slack DM in production). */
export interface LoginNotifier {
  connectionReady(session: LoginSession, connection: Connection, service: Service): Promise<void>;
}

/** An OAuth flow for one login: the authorize URL to open and how to turn the intercepted redirect into a credential. */
export interface OAuthFlow {
  readonly authorizeUrl: string;
  readonly redirectPrefix: string;
  complete(redirectUrl: string): Promise<CredentialInput>;
}

/** Starts an OAuth flow for a service (PKCE, discovery, registration: src/login/oauth). */
export type OAuthFlowFactory = (service: Service, session: LoginSession) => Promise<OAuthFlow>;

/** Why opening a link was refused. */
export type OpenRefusal = "invalid" | "used" | "expired" | "full";

/** Settings of the login service. */
export interface LoginSettings {
  readonly publicUrl: string;
  readonly linkTtlMs: number;
  readonly flowTimeoutMs: number;
  readonly maxConcurrent: number;
}

interface Flow {
  readonly session: LoginSession;
  readonly service: Service;
  browser: LoginBrowser | undefined;
  send: ((m: ServerMessage) => void) | undefined;
  timer: NodeJS.Timeout | undefined;
  ended: boolean;
  cookiePoll: NodeJS.Timeout | undefined;
  oauth: OAuthFlow | undefined;
}

/**
 * Login flows: mints one-time links bound to a Slack user, lets exactly one browser open each,
 * drives the confined browser and the capture strategy, and stores the credential for the user
 * the link was minted for, and only from the browser that opened it.
 */
export class LoginService {
  private readonly flows = new Map<string, Flow>();
  private opening = 0;

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
  ) {}

  /** Number of login flows in progress (a link opened in a browser, not yet ended). */
  get activeFlows(): number {
    return this.flows.size;
  }

  /** Number of flows with a live browser. */
  get activeBrowsers(): number {
    let n = 0;
    for (const f of this.flows.values()) if (f.browser) n++;
    return n;
  }

  /** Mints a one-time link for `userId`; the returned URL is a bearer secret for that user only. */
  async mint(m: { teamId: string; userId: string; service: string; scope?: ConnectionScope; channelId: string | null; threadTs: string | null }): Promise<{ url: string; expiresAt: number; sessionId: string }> {
    const service = this.deps.registry.get(m.service);
    if (!service) throw new Error(`unknown service ${m.service}`);
    const scope = m.scope ?? (m.channelId && m.threadTs ? "thread" : "user");
    if (!service.entry.scopes.includes(scope)) throw new Error(`service ${m.service} does not allow scope ${scope}`);
    // Refuse now rather than after the user has signed in: a thread connection needs its thread.
    if (scope === "thread" && (!m.channelId || !m.threadTs)) throw new Error(`a thread-scoped ${m.service} connection needs a thread`);
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
   * Opens a link: the first browser consumes it and receives a viewer secret (a cookie); the same
   * viewer may reload; anyone else is refused and audited.
   */
  async open(token: string, viewerSecret: string | undefined): Promise<{ session: LoginSession; viewerSecret: string } | { refused: OpenRefusal }> {
    if (!isTokenShaped(token)) return { refused: "invalid" };
    const hash = secretHash(this.deps.keys, token);
    const now = this.deps.clock.now();
    const existing = await this.deps.store.loginSessions.getByTokenHash(hash);
    if (!existing) return { refused: "invalid" };
    const audit = (decision: string): AuditEvent => ({ at: now, event: "login_refused", teamId: existing.teamId, callerUserId: existing.userId, service: existing.service, decision });
    if (existing.status === "opened" && viewerSecret && existing.viewerHash === secretHash(this.deps.keys, viewerSecret) && existing.expiresAt > now) {
      return { session: existing, viewerSecret };
    }
    if (existing.status !== "minted") {
      await this.deps.store.audit.append([audit(existing.status === "opened" ? "second_viewer" : "link_reused")]);
      return { refused: "used" };
    }
    if (existing.expiresAt <= now) {
      await this.deps.store.audit.append([audit("link_expired")]);
      return { refused: "expired" };
    }
    // Capacity is checked before the link is consumed, so a full broker does not burn the link.
    if (this.activeBrowsers + this.opening >= this.deps.settings.maxConcurrent) return { refused: "full" };
    const secret = newViewerSecret();
    const session = await this.deps.store.loginSessions.open(hash, secretHash(this.deps.keys, secret), now, now + this.deps.settings.flowTimeoutMs, [
      { at: now, event: "login_started", teamId: existing.teamId, callerUserId: existing.userId, service: existing.service, decision: "link_opened" },
    ]);
    if (!session) {
      await this.deps.store.audit.append([audit("second_viewer")]);
      return { refused: "used" };
    }
    return { session, viewerSecret: secret };
  }

  /** Whether `viewerSecret` is the one that opened session `id`. */
  async viewerMatches(id: string, viewerSecret: string | undefined): Promise<LoginSession | undefined> {
    if (!viewerSecret) return undefined;
    const s = await this.deps.store.loginSessions.get(id);
    if (!s || s.status !== "opened" || s.viewerHash !== secretHash(this.deps.keys, viewerSecret)) return undefined;
    return s;
  }

  /** Attaches the viewer's socket to the session's flow, starting the browser for the strategy. */
  async attach(session: LoginSession, send: (m: ServerMessage) => void, viewport: { width: number; height: number }): Promise<void> {
    const service = this.deps.registry.get(session.service);
    if (!service) {
      send({ type: "status", state: "failed", message: "This service no longer exists." });
      return;
    }
    let flow = this.flows.get(session.id);
    if (flow && !flow.ended) {
      flow.send = send;
    } else {
      flow = { session, service, browser: undefined, send, timer: undefined, ended: false, cookiePoll: undefined, oauth: undefined };
      this.flows.set(session.id, flow);
      const remaining = Math.max(1_000, session.expiresAt - this.deps.clock.now());
      flow.timer = setTimeout(() => void this.end(flow!, "expired", "The login timed out. Ask for a new link with /connect."), remaining);
      flow.timer.unref();
    }
    const f = flow;
    const capture = service.entry.capture;
    f.send?.({ type: "strategy", strategy: capture.strategy, service: service.displayName, browser: capture.strategy !== "paste" || Boolean(capture.startUrl) });
    if (capture.strategy === "paste") {
      f.send?.({ type: "paste_form", instructions: capture.instructions, fields: capture.fields.map((x) => ({ name: x.name, label: x.label, secret: x.secret })) });
      f.send?.({ type: "status", state: "waiting", message: "Paste your token below. It goes straight into encrypted storage." });
      if (capture.startUrl && !f.browser) await this.startBrowser(f, capture.startUrl, viewport);
      return;
    }
    if (f.browser) {
      f.send?.({ type: "status", state: "waiting", message: "Waiting for you to sign in." });
      return;
    }
    f.send?.({ type: "status", state: "loading", message: "Opening the sign-in page…" });
    try {
      if (capture.strategy === "oauth") {
        if (!this.deps.oauth) throw new Error("oauth is not configured on this broker");
        f.oauth = await this.deps.oauth(service, session);
        const oauth = f.oauth;
        await this.startBrowser(f, oauth.authorizeUrl, viewport, {
          prefix: oauth.redirectPrefix,
          onHit: (url) => void this.completeOAuth(f, url),
        });
      } else {
        await this.startBrowser(f, capture.startUrl, viewport);
        f.cookiePoll = setInterval(() => void this.checkCookies(f, false), 500);
        f.cookiePoll.unref();
      }
      f.send?.({ type: "status", state: "waiting", message: "Waiting for you to sign in." });
    } catch (err) {
      this.deps.log.warn("login browser failed to start", { sessionId: session.id, error: (err as Error).message });
      await this.end(f, "failed", "The sign-in page could not be opened. Try again later.");
    }
  }

  private async startBrowser(f: Flow, startUrl: string, viewport: { width: number; height: number }, intercept?: { prefix: string; onHit(url: string): void }): Promise<void> {
    this.opening++;
    try {
      const allowed = f.service.entry.loginDomains.length ? f.service.entry.loginDomains : [new URL(startUrl).host];
      f.browser = await this.deps.browsers({
        startUrl,
        allowedHosts: allowed,
        viewport,
        onFrame: (fr) => f.send?.({ type: "frame", data: fr.data.toString("base64"), width: fr.width, height: fr.height, popup: fr.popup }),
        onBlockedNavigation: (url) => {
          this.deps.log.info("login navigation blocked", { sessionId: f.session.id, host: safeHost(url) });
        },
        ...(intercept ? { intercept } : {}),
      });
      if (f.ended) await f.browser.close();
    } finally {
      this.opening--;
    }
  }

  /** Handles one validated message from the session's viewer. */
  async input(sessionId: string, m: ClientMessage): Promise<void> {
    const f = this.flows.get(sessionId);
    if (!f || f.ended) return;
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
      case "paste":
        await this.completePaste(f, m.fields);
        return;
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

  private async completePaste(f: Flow, fields: Record<string, string>): Promise<void> {
    const capture = f.service.entry.capture;
    if (capture.strategy !== "paste") return;
    const values: Record<string, string> = {};
    for (const field of capture.fields) {
      const v = (fields[field.name] ?? "").trim();
      if (!v) return f.send?.({ type: "status", state: "waiting", message: `${field.label} is required.` });
      if (field.pattern && !new RegExp(field.pattern).test(v)) return f.send?.({ type: "status", state: "waiting", message: `${field.label} does not look right for ${f.service.displayName}.` });
      values[field.name] = v;
    }
    await this.store(f, { kind: "fields", fields: values });
  }

  private async checkCookies(f: Flow, userSaidDone: boolean): Promise<void> {
    const capture = f.service.entry.capture;
    if (capture.strategy !== "cookie" || !f.browser || f.ended) return;
    const cookies = await f.browser.cookies().catch(() => []);
    const names = new Set(cookies.map((c) => c.name));
    const complete = capture.requiredCookies.every((n) => names.has(n));
    if (!complete) {
      if (userSaidDone) f.send?.({ type: "status", state: "waiting", message: "Not signed in yet: finish signing in, then press Done." });
      return;
    }
    await this.store(f, {
      kind: "cookies",
      cookies: cookies.map((c) => ({ name: c.name, value: c.value, domain: c.domain, path: c.path, ...(c.expires !== undefined && c.expires > 0 ? { expires: c.expires } : {}), ...(c.httpOnly !== undefined ? { httpOnly: c.httpOnly } : {}), ...(c.secure !== undefined ? { secure: c.secure } : {}), ...(c.sameSite ? { sameSite: c.sameSite } : {}) })),
    });
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
    ]);
    f.send?.({ type: "status", state: "captured", message: `Connected. Your ${f.service.displayName} credential is stored encrypted; you can close this page.` });
    await this.teardown(f);
    try {
      await this.deps.notifier?.connectionReady(s, connection, f.service);
    } catch (err) {
      this.deps.log.warn("could not tell the owner their connection is ready", { sessionId: s.id, error: (err as Error).message });
    }
  }

  private async end(f: Flow, status: "cancelled" | "expired" | "failed", message: string): Promise<void> {
    if (f.ended) return;
    f.ended = true;
    const now = this.deps.clock.now();
    await this.deps.store.loginSessions.end(f.session.id, status, now, null, [
      { at: now, event: "login_refused", teamId: f.session.teamId, callerUserId: f.session.userId, service: f.session.service, decision: status },
    ]);
    f.send?.({ type: "status", state: status, message });
    await this.teardown(f);
  }

  private async teardown(f: Flow): Promise<void> {
    if (f.timer) clearTimeout(f.timer);
    if (f.cookiePoll) clearInterval(f.cookiePoll);
    const b = f.browser;
    f.browser = undefined;
    this.flows.delete(f.session.id);
    if (b) await b.close().catch((err: unknown) => this.deps.log.warn("login browser close failed", { error: (err as Error).message }));
  }

  /** A viewer went away: the flow keeps running until its timeout so a reload can reattach. */
  detach(sessionId: string): void {
    const f = this.flows.get(sessionId);
    if (f) f.send = undefined;
  }

  /** Expires unopened links past their TTL. */
  async reap(): Promise<number> {
    return (await this.deps.store.loginSessions.expireDue(this.deps.clock.now())).length;
  }

  /** Closes every browser (shutdown). */
  async shutdown(): Promise<void> {
    await Promise.all([...this.flows.values()].map((f) => this.end(f, "cancelled", "The broker is shutting down.")));
  }
}

function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "(invalid)";
  }
}
