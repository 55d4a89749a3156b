import type { Clock } from "../clock/clock.js";
import type { Connection, Grant } from "../store/records.js";
import type { Store } from "../store/store.js";
import type { ConnectionLifecycle } from "./lifecycle.js";

/** Who may act as a slaude-connect admin of one team (Slack's AdminDirectory in production); admins never cross teams. */
export interface AdminCheck {
  isAdmin(teamId: string, userId: string): Promise<boolean>;
}

/** How a grant revoke went: `refused` when `may` said no (told apart from a missing grant only in logs). */
export type GrantRevokeResult =
  | { readonly kind: "revoked"; readonly grant: Grant }
  | { readonly kind: "not_live"; readonly grant: Grant }
  | { readonly kind: "not_found" }
  | { readonly kind: "refused" };

/** How an admin revoke went; `not_admin` was refused and audited. */
export type AdminRevokeResult =
  | { readonly kind: "revoked"; readonly connection: Connection }
  | { readonly kind: "not_live"; readonly connection: Connection }
  | { readonly kind: "not_found" }
  | { readonly kind: "not_admin" };

/** How an owner's revoke of their own connection went. */
export type OwnerRevokeResult =
  | { readonly kind: "revoked"; readonly connection: Connection }
  | { readonly kind: "not_yours" };

/**
 * The one place that revokes grants and performs admin revokes, each with its audit rows, for the
 * Slack handlers and the CLI alike (grants are created with their approval, in the same transaction).
 */
export class GrantsAdmin {
  constructor(
    private readonly deps: { store: Store; lifecycle: ConnectionLifecycle; clock: Clock; admins?: AdminCheck },
  ) {}

  /** Revokes grant `id` as `actor` if `may(grant)` allows it; one `grant_revoked` row when it was live. */
  async revokeGrant(id: string, actor: string, may: (g: Grant) => boolean = () => true): Promise<GrantRevokeResult> {
    const g = await this.deps.store.grants.get(id);
    if (!g) return { kind: "not_found" };
    if (!may(g)) return { kind: "refused" };
    const at = this.deps.clock.now();
    const ok = await this.deps.store.grants.revoke(g.id, actor, at, [
      {
        at,
        event: "grant_revoked",
        teamId: g.teamId,
        channelId: g.channelId,
        threadTs: g.threadTs,
        ownerUserId: g.ownerUserId,
        callerUserId: g.borrowerUserId,
        connectionId: g.connectionId,
        service: g.service,
        actor,
      },
    ]);
    return ok ? { kind: "revoked", grant: g } : { kind: "not_live", grant: g };
  }

  /** Revokes `userId`'s own connection in `teamId` (wiped, its grants revoked); anyone else's is `not_yours`. */
  async revokeOwn(teamId: string, connectionId: string | undefined, userId: string): Promise<OwnerRevokeResult> {
    const conn = connectionId === undefined ? undefined : await this.deps.store.connections.get(connectionId);
    if (!conn || conn.ownerUserId !== userId || conn.teamId !== teamId) return { kind: "not_yours" };
    await this.deps.lifecycle.revoke(conn.id, userId, "revoked by owner");
    return { kind: "revoked", connection: conn };
  }

  /**
   * Revokes any connection of `teamId` on an admin's word. A non-admin (or no admin check at all:
   * fail closed) is refused with an `admin_action` row; a done revoke writes one too.
   */
  async adminRevoke(teamId: string, connectionId: string | undefined, admin: string): Promise<AdminRevokeResult> {
    if (!(await this.isAdmin(teamId, admin))) {
      await this.deps.store.audit.append([
        {
          at: this.deps.clock.now(),
          event: "admin_action",
          teamId,
          decision: "refused_not_admin",
          actor: admin,
          ...(connectionId !== undefined ? { connectionId } : {}),
        },
      ]);
      return { kind: "not_admin" };
    }
    const conn = connectionId === undefined ? undefined : await this.deps.store.connections.get(connectionId);
    if (!conn || conn.teamId !== teamId) return { kind: "not_found" };
    const ended = await this.deps.lifecycle.revoke(conn.id, `admin:${admin}`, "revoked by admin");
    await this.deps.store.audit.append([
      {
        at: this.deps.clock.now(),
        event: "admin_action",
        teamId,
        ownerUserId: conn.ownerUserId,
        connectionId: conn.id,
        service: conn.service,
        decision: "revoke",
        actor: admin,
      },
    ]);
    return ended ? { kind: "revoked", connection: conn } : { kind: "not_live", connection: conn };
  }

  /** Whether `userId` is an admin of `teamId`; unknown (no check, or the check failed) is no. */
  async isAdmin(teamId: string, userId: string): Promise<boolean> {
    try {
      return (await this.deps.admins?.isAdmin(teamId, userId)) ?? false;
    } catch {
      return false;
    }
  }
}
