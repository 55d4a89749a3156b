// One-time login links: minted for one Slack user, stored only as an HMAC, consumed by the first
// browser that loads them (which gets a viewer secret), refused to anyone else, and audited.
import { createHmac, randomBytes } from "node:crypto";
import type { AuditEvent } from "../audit/event.js";
import type { Clock } from "../clock/clock.js";
import type { ServiceRegistry } from "../config/registry.js";
import { newId } from "../domain/ids.js";
import type { ConnectionScope, LoginSession } from "../store/records.js";
import type { Store } from "../store/store.js";
import type { KeyRing } from "../vault/keyring.js";
import { LoginError } from "./errors.js";
import type { FlowRegistry } from "./flow-registry.js";
import type { HolderRecord } from "./replica/replica.js";

/** A fresh one-time link token: 256 random bits, URL-safe. It is a bearer secret: never logged. */
export function newLinkToken(): string {
  return randomBytes(32).toString("base64url");
}

/** A fresh viewer-session secret for the browser that opens a link. */
export function newViewerSecret(): string {
  return randomBytes(32).toString("base64url");
}

/** What the store keeps instead of a token or viewer secret: an HMAC under the login-link subkey. */
export function secretHash(keys: KeyRing, secret: string): string {
  return createHmac("sha256", keys.subkey("login-link")).update(secret).digest("hex");
}

/** Whether a string has the shape of a link token (before any lookup). */
export function isTokenShaped(s: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(s);
}

/** Why opening a link was refused ("ended": the same viewer comes back to a flow that is over). */
export type OpenRefusal = "invalid" | "used" | "expired" | "full" | "ended";

/** What a mint asks for: who, which service, and where (a thread-scoped link needs its thread). */
export interface MintRequest {
  readonly teamId: string;
  readonly userId: string;
  readonly service: string;
  readonly scope?: ConnectionScope;
  readonly channelId: string | null;
  readonly threadTs: string | null;
}

/** The links' dependencies: the store, the key ring that hashes secrets, and the running flows. */
export interface LinkDeps {
  readonly store: Store;
  readonly keys: KeyRing;
  readonly registry: ServiceRegistry;
  readonly clock: Clock;
  readonly flows: FlowRegistry;
  /** Records this replica as the holder of a link it opens (replicas on PostgreSQL; absent: one process). */
  readonly holding?: HolderRecord;
  readonly settings: { readonly publicUrl: string; readonly linkTtlMs: number; readonly flowTimeoutMs: number };
}

/** Mints and redeems login links; redeeming starts the link's flow in the registry. */
export class LoginLinks {
  constructor(private readonly deps: LinkDeps) {}

  /**
   * Mints a one-time link for `m.userId`; the returned URL is a bearer secret for that user only.
   * Throws LoginError when the service or the scope does not allow it.
   */
  async mint(m: MintRequest): Promise<{ url: string; expiresAt: number; sessionId: string }> {
    const service = this.deps.registry.get(m.service);
    if (!service) throw new LoginError("unknown_service", `unknown service ${m.service}`);
    const scope = m.scope ?? (m.channelId && m.threadTs ? "thread" : "user");
    if (!service.entry.scopes.includes(scope))
      throw new LoginError("scope_not_allowed", `service ${m.service} does not allow scope ${scope}`);
    // Refuse now rather than after the user has signed in: a thread connection needs its thread.
    if (scope === "thread" && (!m.channelId || !m.threadTs))
      throw new LoginError("needs_thread", `a thread-scoped ${m.service} connection needs a thread`);
    const token = newLinkToken();
    const now = this.deps.clock.now();
    const id = newId("login");
    const expiresAt = now + this.deps.settings.linkTtlMs;
    await this.deps.store.loginSessions.create(
      {
        id,
        tokenHash: secretHash(this.deps.keys, token),
        teamId: m.teamId,
        userId: m.userId,
        service: m.service,
        scope,
        channelId: scope === "thread" ? m.channelId : null,
        threadTs: scope === "thread" ? m.threadTs : null,
        createdAt: now,
        expiresAt,
      },
      [
        {
          at: now,
          event: "login_started",
          teamId: m.teamId,
          channelId: m.channelId,
          threadTs: m.threadTs,
          callerUserId: m.userId,
          service: m.service,
          decision: "link_minted",
        },
      ],
    );
    return { url: `${this.deps.settings.publicUrl}/login/l/${token}`, expiresAt, sessionId: id };
  }

  /**
   * Opens a link: the first browser consumes it, starts the flow (reserving its browser slot) and
   * receives a viewer secret (a cookie); the same viewer may reload; anyone else is refused and audited.
   */
  async open(
    token: string,
    viewerSecret: string | undefined,
  ): Promise<{ session: LoginSession; viewerSecret: string } | { refused: OpenRefusal }> {
    if (!isTokenShaped(token)) return { refused: "invalid" };
    const { store, keys, flows } = this.deps;
    const hash = secretHash(keys, token);
    const now = this.deps.clock.now();
    const existing = await store.loginSessions.getByTokenHash(hash);
    if (!existing) return { refused: "invalid" };
    const service = this.deps.registry.get(existing.service);
    if (!service) return { refused: "invalid" };
    const audit = (decision: string): AuditEvent => ({
      at: now,
      event: "login_refused",
      teamId: existing.teamId,
      callerUserId: existing.userId,
      service: existing.service,
      decision,
    });
    const sameViewer = viewerSecret !== undefined && existing.viewerHash === secretHash(keys, viewerSecret);
    if (existing.status === "opened" && sameViewer && existing.expiresAt > now) {
      return this.resume(existing) === "full" ? { refused: "full" } : { session: existing, viewerSecret };
    }
    if (sameViewer && existing.status !== "minted") return { refused: "ended" };
    if (existing.status !== "minted") {
      await store.audit.append([audit(existing.status === "opened" ? "second_viewer" : "link_reused")]);
      return { refused: "used" };
    }
    if (existing.expiresAt <= now) {
      await store.audit.append([audit("link_expired")]);
      return { refused: "expired" };
    }
    // The slot is taken before the link is consumed (a full broker does not burn the link) and
    // before the first await, so concurrent loads cannot all pass the check.
    const slot = flows.takeSlot(service, existing.teamId);
    if (slot === "full") return { refused: "full" };
    let session: LoginSession | undefined;
    const secret = newViewerSecret();
    try {
      session = await store.loginSessions.open(
        hash,
        secretHash(keys, secret),
        now,
        now + this.deps.settings.flowTimeoutMs,
        [
          {
            at: now,
            event: "login_started",
            teamId: existing.teamId,
            callerUserId: existing.userId,
            service: existing.service,
            decision: "link_opened",
          },
        ],
      );
    } finally {
      if (!session && slot) flows.returnSlot(existing.teamId);
    }
    if (!session) {
      await store.audit.append([audit("second_viewer")]);
      return { refused: "used" };
    }
    flows.start(session, service, slot);
    // Other replicas forward this viewer's page and socket here from now on (docs/scaling.md).
    await this.deps.holding?.record(session.id);
    return { session, viewerSecret: secret };
  }

  /**
   * Runs the opened flow of `session` here: already running, or started again with a new slot when
   * it is not (this broker restarted, or took the flow over from a replica that stopped).
   */
  resume(session: LoginSession): "running" | "full" | "invalid" {
    const { flows } = this.deps;
    if (flows.get(session.id)) return "running";
    const service = this.deps.registry.get(session.service);
    if (!service) return "invalid";
    const slot = flows.takeSlot(service, session.teamId);
    if (slot === "full") return "full";
    flows.start(session, service, slot);
    return "running";
  }

  /** The session `id` if `viewerSecret` is the one that opened it and it is still open. */
  async viewerMatches(id: string, viewerSecret: string | undefined): Promise<LoginSession | undefined> {
    if (!viewerSecret) return undefined;
    const s = await this.deps.store.loginSessions.get(id);
    if (s?.status !== "opened" || s.viewerHash !== secretHash(this.deps.keys, viewerSecret)) return undefined;
    return s;
  }
}
