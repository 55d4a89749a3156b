import type { AuditEvent } from "../audit/event.js";
import type { Clock } from "../clock/clock.js";
import type { ConnectionLifecycle } from "../connections/lifecycle.js";
import type { Logger } from "../log/logger.js";
import type { Installation, InstallationMeta, InstallationRepo, TenantQuery } from "../store/installation-records.js";
import type { Store } from "../store/store.js";
import type { Installations } from "./installations.js";

// What happens to a tenant when Slack or an operator ends its installation. Uninstalling wipes the
// tenant: every live connection revoked through the connection lifecycle (ciphertext wiped, grants
// revoked, pending approvals expired, vendor children killed on every replica), stored results
// deleted, all audited; the installation is kept as an `uninstalled` row without ciphertext.
// Slack's tokens_revoked (or an operator) only disables it: calls fail closed until it is reinstalled
// or enabled. Nothing of another tenant is touched.

/** The ids an uninstall or revocation event names. */
export interface TenantEvent extends TenantQuery {
  readonly isEnterpriseInstall: boolean;
}

/** What wiping a tenant did, for the caller's log line and the tests. */
export interface WipeReport {
  readonly installation: InstallationMeta;
  readonly teams: readonly string[];
  readonly connectionsRevoked: number;
  readonly resultsDeleted: number;
}

/** What the tenant lifecycle acts on. */
export interface TenantLifecycleDeps {
  readonly repo: InstallationRepo;
  readonly installations: Installations;
  readonly store: Pick<Store, "connections" | "results">;
  readonly lifecycle: Pick<ConnectionLifecycle, "revoke">;
  readonly clock: Clock;
  readonly log: Logger;
  /** Told after a wipe, so every replica drops what it holds for the installation. */
  readonly onEnded?: (installationId: string) => void;
}

/** Uninstall, disable and enable, each audited. */
export class TenantLifecycle {
  constructor(private readonly d: TenantLifecycleDeps) {}

  /** Slack's app_uninstalled (or an operator's uninstall): wipes exactly that tenant; undefined when no live installation matches. */
  async uninstall(e: TenantEvent, actor: string): Promise<WipeReport | undefined> {
    const inst = await this.find(e);
    if (!inst || inst.status === "uninstalled") return undefined;
    const now = this.d.clock.now();
    const teams = [...new Set([...(inst.teamId ? [inst.teamId] : []), ...this.d.installations.teamsServedBy(inst.id)])];
    const tenantId = inst.teamId ?? inst.enterpriseId ?? "";
    // The installation goes first: from here no replica hands out its token, so nothing new starts.
    await this.d.repo.uninstall(inst.id, now, [
      {
        at: now,
        event: "installation_uninstalled",
        teamId: tenantId,
        actor,
        decision: inst.isEnterpriseInstall ? "org_install" : "team_install",
      },
    ]);
    this.d.installations.forget(inst.id);
    this.d.onEnded?.(inst.id);
    let connectionsRevoked = 0;
    let resultsDeleted = 0;
    for (const teamId of teams) {
      for (const c of await this.d.store.connections.list({ teamId, statuses: ["active", "needs_login"] })) {
        if (await this.d.lifecycle.revoke(c.id, actor, "app uninstalled")) connectionsRevoked++;
      }
      const audit: AuditEvent[] = [
        { at: now, event: "admin_action", teamId, actor, decision: "results_deleted_uninstall" },
      ];
      resultsDeleted += await this.d.store.results.deleteTeam(teamId, audit);
    }
    const { sealed: _sealed, ...meta } = inst;
    this.d.log.info("slack installation uninstalled; tenant wiped", {
      installationId: inst.id,
      teams: teams.length,
      connectionsRevoked,
      resultsDeleted,
    });
    return { installation: { ...meta, status: "uninstalled" }, teams, connectionsRevoked, resultsDeleted };
  }

  /** Slack's tokens_revoked for the bot user of a live installation: disabled until reinstalled. Returns whether it applied. */
  async tokensRevoked(e: TenantEvent, botUserIds: readonly string[], actor: string): Promise<boolean> {
    const inst = await this.find(e);
    if (inst?.status !== "active" || !botUserIds.includes(inst.botUserId)) return false;
    return this.disable(inst.id, "tokens_revoked", actor);
  }

  /** Disables an active installation (`reason`: operator, tokens_revoked, refresh_failed). */
  async disable(id: string, reason: string, actor: string): Promise<boolean> {
    const inst = await this.d.repo.get(id);
    if (inst?.status !== "active") return false;
    const now = this.d.clock.now();
    const ok = await this.d.repo.setStatus(id, "disabled", reason, now, [
      {
        at: now,
        event: "installation_disabled",
        teamId: inst.teamId ?? inst.enterpriseId ?? "",
        actor,
        decision: reason,
      },
    ]);
    this.d.installations.forget(id);
    this.d.onEnded?.(id);
    return ok;
  }

  /** Enables a disabled installation again (an operator's word; its stored token must still work). */
  async enable(id: string, actor: string): Promise<boolean> {
    const inst = await this.d.repo.get(id);
    if (inst?.status !== "disabled") return false;
    const now = this.d.clock.now();
    const ok = await this.d.repo.setStatus(id, "active", null, now, [
      { at: now, event: "installation_enabled", teamId: inst.teamId ?? inst.enterpriseId ?? "", actor },
    ]);
    this.d.installations.forget(id);
    return ok;
  }

  private async find(e: TenantEvent): Promise<Installation | undefined> {
    // An org-wide event names the enterprise; a workspace's event names its team (org first, as everywhere).
    return this.d.repo.find(
      e.isEnterpriseInstall ? { enterpriseId: e.enterpriseId, teamId: null } : { enterpriseId: null, teamId: e.teamId },
    );
  }
}
