import type { Clock } from "../clock/clock.js";
import type { ClusterSignals } from "../cluster/signals.js";
import type { ServiceRegistry } from "../config/registry.js";
import { errorMessage } from "../domain/errors.js";
import { newId } from "../domain/ids.js";
import type { Logger } from "../log/logger.js";
import type { Connection, ConnectionScope } from "../store/records.js";
import type { Store } from "../store/store.js";
import { bindingOf } from "../vault/binding.js";
import { type CredentialInput, credentialSchema } from "../vault/credential.js";
import type { Vault } from "../vault/vault.js";
import { ConnectionError } from "./errors.js";

/** Everything needed to create a connection; the credential is sealed before it touches the store. */
export interface CreateConnection {
  readonly teamId: string;
  readonly ownerUserId: string | null;
  readonly service: string;
  readonly scope: ConnectionScope;
  readonly channelId?: string | null;
  readonly threadTs?: string | null;
  readonly credential: CredentialInput;
  readonly label?: string | null;
  /** Who created it: a Slack user id, or `cli:<name>`. */
  readonly createdBy: string;
  /** Overrides the service TTL (ms), e.g. for shared connections set up by an admin. */
  readonly ttlMs?: number;
}

/** Called after a connection ended, so the pool can kill its child. */
export type ConnectionEndedListener = (c: Connection) => void | Promise<void>;

/**
 * Creates, ends and expires connections: the one place that seals credentials into rows and makes
 * sure an ended connection is wiped, its grants revoked, its child killed and the change audited.
 */
export class ConnectionLifecycle {
  private readonly listeners: ConnectionEndedListener[] = [];

  constructor(
    /** `signals`: where each committed end is announced, so every replica (not only this one) kills the child. */
    private readonly deps: {
      store: Store;
      vault: Vault;
      registry: ServiceRegistry;
      clock: Clock;
      log: Logger;
      signals?: Pick<ClusterSignals, "publish">;
    },
  ) {}

  /** Registers a listener run after every connection end (revoke, replace, expire). */
  onEnded(listener: ConnectionEndedListener): void {
    this.listeners.push(listener);
  }

  private async notifyEnded(c: Connection): Promise<void> {
    // First, before this process's own (possibly slow) child stop: the other replicas stop theirs meanwhile.
    await this.deps.signals?.publish("connection_ended", { connectionId: c.id });
    for (const l of this.listeners) {
      try {
        await l(c);
      } catch (err) {
        this.deps.log.error("connection end listener failed", { connectionId: c.id, error: errorMessage(err) });
      }
    }
  }

  /** Validates against the registry, seals the credential, stores the row (replacing a live duplicate). */
  async create(input: CreateConnection): Promise<Connection> {
    const service = this.deps.registry.get(input.service);
    if (!service)
      throw new ConnectionError("unknown_service", `unknown service "${input.service}" (not in the service registry)`);
    if (!service.entry.scopes.includes(input.scope)) {
      throw new ConnectionError(
        "scope_not_allowed",
        `service "${input.service}" does not allow scope "${input.scope}" (allowed: ${service.entry.scopes.join(", ")})`,
      );
    }
    const thread = input.scope === "thread";
    if (thread && (!input.channelId || !input.threadTs))
      throw new ConnectionError("missing_thread", "a thread-scoped connection needs a channel and thread");
    if ((input.scope === "shared") !== (input.ownerUserId === null)) {
      throw new ConnectionError("scope_not_allowed", "shared connections have no owner; every other scope has one");
    }
    const credential = credentialSchema.safeParse(input.credential);
    if (!credential.success) throw new ConnectionError("invalid_credential", "the credential has an unexpected shape");
    const now = this.deps.clock.now();
    const draft = {
      id: newId("conn"),
      teamId: input.teamId,
      ownerUserId: input.ownerUserId,
      service: input.service,
      scope: input.scope,
      channelId: thread ? input.channelId! : null,
      threadTs: thread ? input.threadTs! : null,
      label: input.label ?? null,
      createdBy: input.createdBy,
      createdAt: now,
      expiresAt: now + (input.ttlMs ?? service.ttlMs),
    };
    const sealed = this.deps.vault.sealCredential(credential.data, bindingOf(draft));
    const { connection, replaced } = await this.deps.store.connections.create({ ...draft, sealed }, [
      {
        at: now,
        event: "connection_created",
        teamId: draft.teamId,
        channelId: draft.channelId,
        threadTs: draft.threadTs,
        ownerUserId: draft.ownerUserId,
        connectionId: draft.id,
        service: draft.service,
        decision: draft.scope,
        actor: draft.createdBy,
      },
    ]);
    if (replaced) await this.notifyEnded(replaced);
    return connection;
  }

  /** Revokes a live connection (wipes it, revokes its grants, kills its child); undefined if it was not live. */
  async revoke(id: string, actor: string, reason = "revoked"): Promise<Connection | undefined> {
    const now = this.deps.clock.now();
    const before = await this.deps.store.connections.get(id);
    if (!before) return undefined;
    const ended = await this.deps.store.connections.end(id, {
      status: "revoked",
      reason,
      at: now,
      actor,
      audit: [
        {
          at: now,
          event: "connection_revoked",
          teamId: before.teamId,
          channelId: before.channelId,
          threadTs: before.threadTs,
          ownerUserId: before.ownerUserId,
          connectionId: id,
          service: before.service,
          decision: reason,
          actor,
        },
      ],
    });
    if (ended) await this.notifyEnded(ended);
    return ended;
  }

  /** Expires every connection past its TTL; returns how many. */
  async reapExpired(): Promise<number> {
    const expired = await this.deps.store.connections.expireDue(this.deps.clock.now());
    for (const c of expired) await this.notifyEnded(c);
    if (expired.length) this.deps.log.info("connections expired", { count: expired.length });
    return expired.length;
  }
}
