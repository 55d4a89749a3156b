import type { AuditEvent } from "../../audit/event.js";
import type { Clock } from "../../clock/clock.js";
import type { ServiceRegistry } from "../../config/registry.js";
import { errorName } from "../../domain/errors.js";
import type { Logger } from "../../log/logger.js";
import type { Connection } from "../../store/records.js";
import type { Store } from "../../store/store.js";
import { bindingOf } from "../../vault/binding.js";
import { type Credential, credentialSchema } from "../../vault/credential.js";
import type { Vault } from "../../vault/vault.js";
import { type OAuthClientConfig, OAuthClientResolver } from "./client-resolver.js";
import { isTransient, OAuthError } from "./errors.js";
import type { HttpOptions } from "./http.js";
import { processRefreshLock, type RefreshLock } from "./refresh-lock.js";
import { type OAuthTokens, type RefreshRequest, refresh } from "./token-client.js";

/** Tells a connection's owner that it needs a new login (e.g. a Slack DM). */
export interface NeedsLoginNotifier {
  needsLogin(connection: Connection): Promise<void>;
}

/** Dependencies of {@link OAuthRefresher}. */
export interface OAuthRefresherDeps {
  readonly store: Store;
  readonly vault: Vault;
  readonly registry: ServiceRegistry;
  readonly clock: Clock;
  readonly log: Logger;
  readonly notifier: NeedsLoginNotifier;
  /** Refresh when the access token expires within this many ms (default 60 s). */
  readonly skewMs?: number;
  /** The refresh call (default: the token client's `refresh` with this clock). */
  readonly refreshFn?: (req: RefreshRequest) => Promise<OAuthTokens>;
  /** Where token endpoints and client ids come from (default: the registry, no client secrets). */
  readonly clients?: OAuthClientResolver;
  /** HTTP settings of the default refreshFn. */
  readonly http?: HttpOptions;
  /** Serialises refreshes of one connection across replicas (default: this process's in-flight map only). */
  readonly lock?: RefreshLock;
}

/** Options of one {@link OAuthRefresher.fresh} call. */
export interface FreshOptions {
  /** The client the connection's login used, when it is not in the registry (discovery + dynamic registration). */
  readonly oauthClient?: OAuthClientConfig;
}

/** A connection's row and its credential, opened once and fresh enough to use. */
export interface FreshCredential {
  readonly connection: Connection;
  readonly credential: Credential;
}

const ACTOR = "oauth-refresher";

/** A connection whose OAuth access token is within the skew of expiry and has a refresh token to renew it. */
interface Due {
  readonly kind: "due";
  readonly row: Connection;
  readonly current: Extract<Credential, { kind: "oauth" }> & { refreshToken: string };
  readonly expired: boolean;
}

/**
 * Hands out a connection's credential, refreshing OAuth tokens shortly before they expire.
 * One refresh at a time per connection: concurrent callers share it. New tokens are stored
 * before anyone uses them, so a rotated refresh token is never lost. A rejected refresh marks
 * the connection `needs_login` and tells its owner.
 */
export class OAuthRefresher {
  // Bounded by the connections being opened at this moment: each entry leaves when its read settles.
  private readonly inflight = new Map<string, Promise<FreshCredential>>();
  private readonly skewMs: number;
  private readonly refreshFn: (req: RefreshRequest) => Promise<OAuthTokens>;
  private readonly clients: OAuthClientResolver;

  constructor(private readonly deps: OAuthRefresherDeps) {
    this.skewMs = deps.skewMs ?? 60_000;
    this.refreshFn = deps.refreshFn ?? ((req) => refresh(req, { ...deps.http, clock: deps.clock }));
    this.clients = deps.clients ?? new OAuthClientResolver({ http: { ...deps.http, clock: deps.clock } });
  }

  /**
   * The connection's current credential, refreshed first if it is OAuth and expires within the
   * skew. The row is read again from the store (never trusted from the caller), so a caller
   * holding a stale row cannot replay an already-rotated refresh token. Throws OAuthError
   * `needs_login` (login must be redone), `connection_inactive`, or a transient code when the
   * token has already expired and the vendor is unreachable; VaultError if the row cannot be opened.
   */
  async fresh(connection: Pick<Connection, "id">, opts: FreshOptions = {}): Promise<Credential> {
    return (await this.open(connection, opts)).credential;
  }

  /**
   * As {@link fresh}, with the row the credential was opened from (its `sealed` the stored one, after
   * a refresh too): a caller gets an active, unexpired connection and its plaintext from one decryption.
   */
  open(connection: Pick<Connection, "id">, opts: FreshOptions = {}): Promise<FreshCredential> {
    const running = this.inflight.get(connection.id);
    if (running) return running;
    const p = this.run(connection.id, opts.oauthClient).finally(() => this.inflight.delete(connection.id));
    this.inflight.set(connection.id, p);
    return p;
  }

  private async run(id: string, explicit: OAuthClientConfig | undefined): Promise<FreshCredential> {
    const first = await this.check(id);
    if (first.kind === "ready") return first.value;
    // Another replica may be refreshing the same connection: wait for its lock, then look again, so
    // a refresh it finished meanwhile is used as stored rather than repeated with a spent refresh token.
    return (this.deps.lock ?? processRefreshLock).withLock(id, async () => {
      const again = await this.check(id);
      return again.kind === "ready" ? again.value : this.refreshNow(again, explicit);
    });
  }

  /** Reads the row and says whether its credential can be used as it is, or must be refreshed first. */
  private async check(id: string): Promise<{ kind: "ready"; value: FreshCredential } | Due> {
    const row = await this.deps.store.connections.get(id);
    if (!row) throw new OAuthError("connection_inactive", `connection ${id} does not exist`);
    if (row.status === "needs_login")
      throw new OAuthError("needs_login", `the ${row.service} connection ${id} needs a new login`);
    const now = this.deps.clock.now();
    if (row.status !== "active" || row.expiresAt <= now)
      throw new OAuthError(
        "connection_inactive",
        `connection ${id} is ${row.status === "active" ? "expired" : row.status}`,
      );

    const current = this.deps.vault.openCredential(row.sealed, bindingOf(row));
    const unchanged = { kind: "ready" as const, value: { connection: row, credential: current } };
    if (current.kind !== "oauth" || current.expiresAt === undefined) return unchanged;
    if (current.expiresAt - now > this.skewMs) return unchanged;
    const expired = current.expiresAt <= now;
    if (!current.refreshToken) {
      if (!expired) return unchanged;
      return this.needsLogin(row, "no_refresh_token");
    }
    return { kind: "due", row, current: { ...current, refreshToken: current.refreshToken }, expired };
  }

  /** Refreshes a due credential at the token endpoint and stores the new tokens before returning them. */
  private async refreshNow(
    { row, current, expired }: Due,
    explicit: OAuthClientConfig | undefined,
  ): Promise<FreshCredential> {
    const id = row.id;
    const unchanged = { connection: row, credential: current };
    let next: OAuthTokens;
    try {
      const service = this.deps.registry.get(row.service);
      if (!service) throw new OAuthError("client_unknown", `service "${row.service}" is not in the registry`);
      // The client stored with the tokens (a dynamically registered one) is the one that can refresh them.
      const stored = current.client;
      const client = await this.clients.resolve(
        service,
        explicit ??
          (stored
            ? {
                tokenEndpoint: stored.tokenEndpoint,
                clientId: stored.clientId,
                ...(stored.clientSecret ? { clientSecret: stored.clientSecret } : {}),
                ...(stored.resource ? { resource: stored.resource } : {}),
              }
            : undefined),
      );
      next = await this.refreshFn({
        ...client,
        refreshToken: current.refreshToken,
        ...(current.scope !== undefined ? { scope: current.scope } : {}),
      });
    } catch (err) {
      if (err instanceof OAuthError && err.code === "invalid_grant") return this.needsLogin(row, "invalid_grant");
      const code = err instanceof OAuthError ? err.code : "internal";
      // The old access token still works for a little while: use it and retry on a later call.
      if (!expired) {
        this.deps.log.warn("oauth refresh failed; using the unexpired token", {
          connectionId: id,
          service: row.service,
          code,
          transient: isTransient(err),
        });
        return unchanged;
      }
      this.deps.log.error("oauth refresh failed", { connectionId: id, service: row.service, code });
      throw err;
    }
    return this.store(row, current.refreshToken, { ...next, ...(current.client ? { client: current.client } : {}) });
  }

  /** Seals and stores refreshed tokens, and only then returns them. */
  private async store(row: Connection, previousRefresh: string, tokens: OAuthTokens): Promise<FreshCredential> {
    const credential = credentialSchema.parse(tokens);
    const sealed = this.deps.vault.sealCredential(credential, bindingOf(row));
    const at = this.deps.clock.now();
    const stored = await this.deps.store.connections.updateSecret(row.id, sealed, at, [
      this.audit(
        row,
        at,
        "connection_refreshed",
        tokens.refreshToken !== undefined && tokens.refreshToken !== previousRefresh ? "rotated" : "refreshed",
      ),
    ]);
    // Revoked or expired meanwhile: the new tokens belong to a dead connection and are dropped.
    if (!stored) throw new OAuthError("connection_inactive", `connection ${row.id} ended during the refresh`);
    this.deps.log.info("oauth tokens refreshed", { connectionId: row.id, service: row.service });
    return { connection: { ...row, sealed, updatedAt: at }, credential };
  }

  /** Marks the connection as needing a login, tells its owner once, and throws `needs_login`. */
  private async needsLogin(row: Connection, reason: "invalid_grant" | "no_refresh_token"): Promise<never> {
    const at = this.deps.clock.now();
    const marked = await this.deps.store.connections.markNeedsLogin(row.id, at, [
      { ...this.audit(row, at, "connection_needs_login", reason), errorCode: reason },
    ]);
    this.deps.log.warn("oauth connection needs a new login", { connectionId: row.id, service: row.service, reason });
    if (marked) {
      const updated = (await this.deps.store.connections.get(row.id)) ?? row;
      try {
        await this.deps.notifier.needsLogin(updated);
      } catch (err) {
        this.deps.log.error("needs-login notification failed", { connectionId: row.id, error: errorName(err) });
      }
    }
    throw new OAuthError("needs_login", `the ${row.service} connection ${row.id} needs a new login`);
  }

  private audit(
    row: Connection,
    at: number,
    event: "connection_refreshed" | "connection_needs_login",
    decision: string,
  ): AuditEvent {
    return {
      at,
      event,
      teamId: row.teamId,
      channelId: row.channelId,
      threadTs: row.threadTs,
      ownerUserId: row.ownerUserId,
      connectionId: row.id,
      service: row.service,
      decision,
      actor: ACTOR,
    };
  }
}
