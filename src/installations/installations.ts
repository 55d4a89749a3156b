import { LRUCache } from "lru-cache";
import type { AuditEvent } from "../audit/event.js";
import { newId } from "../domain/ids.js";
import type {
  Installation,
  InstallationBinding,
  InstallationMeta,
  TenantQuery,
} from "../store/installation-records.js";
import { InstallationError } from "./errors.js";
import type { InstallationsDeps, InstallInput, TenantToken } from "./installation-ports.js";
import { TokenRefresh } from "./token-refresh.js";

// The tenants of a deployment: which installation serves a team or an org, its tokens opened from
// the vault, refreshed before expiry exactly once across replicas. Unknown, disabled and
// uninstalled tenants are refused (fail closed); nothing here ever logs or returns a token in text.

/** How far ahead of expiry a rotating token is refreshed (Slack's tokens live 12 hours). */
export const REFRESH_MARGIN_MS = 2 * 60 * 60_000;

/** Bounds: opened tokens held in memory, teams remembered as served by an org install. */
const MAX_OPEN_TOKENS = 10_000;
export const MAX_ORG_TEAMS = 100_000;
const TOKEN_HOLD_MS = 5 * 60_000;
/** How often the workspaces of the org-wide installs are listed again for a team no one is known to serve. */
const ORG_SCAN_EVERY_MS = 60_000;

/** Resolves tenants and hands out their current bot tokens. */
export class Installations {
  private readonly tokens: LRUCache<string, { botToken: string; updatedAt: number }>;
  // team id → org-wide installation id, learned from events and auth.teams.list. Bounded by
  // maxSize (one unit an entry), not `max`: lru-cache allocates `max` slots up front (2.8 MB of heap
  // for 100,000, held by every broker, most of which never meet an org), and grows as it fills under maxSize.
  private readonly orgTeams = new LRUCache<string, string>({ maxSize: MAX_ORG_TEAMS, sizeCalculation: () => 1 });
  private readonly refresher: TokenRefresh;
  private orgScanAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly d: InstallationsDeps) {
    this.tokens = new LRUCache({
      max: MAX_OPEN_TOKENS,
      ttl: TOKEN_HOLD_MS,
      ttlResolution: 0,
      perf: { now: () => d.clock.now() },
    });
    this.refresher = new TokenRefresh({
      ...d,
      usable: (i, who) => this.usable(i, who),
      due: (i) => this.due(i),
      forget: (id) => this.forget(id),
    });
  }

  /** The installation serving an event's ids (org install first, then the team's own), active or refused. */
  async resolve(q: TenantQuery): Promise<Installation> {
    const found = await this.d.repo.find(q);
    if (found && q.teamId && found.isEnterpriseInstall) this.orgTeams.set(q.teamId, found.id);
    return this.usable(found, q.teamId ?? q.enterpriseId ?? "");
  }

  /** The installation serving `teamId` (a team install, else the org install that serves that team). */
  async forTeam(teamId: string): Promise<Installation> {
    const own = await this.d.repo.find({ enterpriseId: null, teamId });
    if (own && !own.isEnterpriseInstall) return this.usable(own, teamId);
    const orgId = this.orgTeams.get(teamId) ?? (await this.findOrgServing(teamId));
    return this.usable(orgId ? await this.d.repo.get(orgId) : undefined, teamId);
  }

  /**
   * Stores an install: a new installation, or the tokens and scopes of the live one with the same key
   * (a reinstall, e.g. after the scopes changed) under its id. Audited as installed or updated; an
   * installation disabled by Slack's tokens_revoked or a failed refresh is active again.
   */
  async record(input: InstallInput, actor: string): Promise<Installation> {
    const now = this.d.clock.now();
    const key: TenantQuery = input.isEnterpriseInstall
      ? { enterpriseId: input.enterpriseId, teamId: null }
      : { enterpriseId: null, teamId: input.teamId };
    const existing = await this.d.repo.find(key);
    const prior =
      existing && existing.status !== "uninstalled" && existing.isEnterpriseInstall === input.isEnterpriseInstall
        ? existing
        : undefined;
    const id = prior?.id ?? newId("inst");
    const binding: InstallationBinding = {
      id,
      enterpriseId: input.enterpriseId,
      teamId: input.teamId,
      isEnterpriseInstall: input.isEnterpriseInstall,
      appId: input.appId,
    };
    const row: Installation = {
      ...binding,
      teamName: input.teamName,
      enterpriseName: input.enterpriseName,
      botId: input.botId,
      botUserId: input.botUserId,
      scopes: [...input.scopes],
      status: "active",
      statusReason: null,
      sealed: this.d.sealer.seal(input.tokens, binding),
      tokenExpiresAt: input.tokenExpiresAt,
      installedBy: input.installedBy,
      installedAt: prior?.installedAt ?? now,
      updatedAt: now,
    };
    // Installed or updated is decided by the row the store replaces, in the same transaction.
    const audit = (previous: InstallationMeta | undefined): AuditEvent[] => [
      {
        at: now,
        event: previous ? "installation_updated" : "installation_installed",
        teamId: input.teamId ?? input.enterpriseId ?? "",
        actor,
        decision: previous
          ? sameScopes(previous.scopes, input.scopes)
            ? "reinstalled"
            : "scopes_changed"
          : input.isEnterpriseInstall
            ? "org_install"
            : "team_install",
      },
    ];
    const stored = await this.d.repo.upsert(row, audit);
    this.forget(stored.id);
    this.refresher.forgetFailure(stored.id);
    return stored;
  }

  /**
   * The configured SLACK_BOT_TOKEN as the one installation: recorded when new or changed, left as it
   * is when the stored row already holds this token with these scopes (no audit row per restart).
   */
  async ensureConfigured(input: InstallInput): Promise<Installation> {
    const existing = await this.d.repo.find(
      input.isEnterpriseInstall
        ? { enterpriseId: input.enterpriseId, teamId: null }
        : { enterpriseId: null, teamId: input.teamId },
    );
    if (existing && existing.status !== "uninstalled" && existing.botUserId === input.botUserId) {
      let same = false;
      try {
        same = this.d.sealer.open(existing.sealed, existing).botToken === input.tokens.botToken;
      } catch {
        // Undecryptable (a rotated-away key): written again below under the current key.
      }
      // A disabled installation stays disabled (an operator or Slack said so) until enabled or reinstalled.
      if (same && (existing.status === "disabled" || sameScopes(existing.scopes, input.scopes))) return existing;
    }
    return this.record(input, "config:SLACK_BOT_TOKEN");
  }

  /** Whether one installation serves both teams (the same team, or two workspaces of one org-wide install); unknown is no. */
  async sameInstallation(teamA: string, teamB: string): Promise<boolean> {
    if (teamA === teamB) return true;
    try {
      return (await this.forTeam(teamA)).id === (await this.forTeam(teamB)).id;
    } catch {
      return false;
    }
  }

  /** The current bot token of the installation serving `teamId`, refreshed first when it is due. */
  async tokenForTeam(teamId: string): Promise<TenantToken> {
    return this.token(await this.forTeam(teamId));
  }

  /** The current bot token of `installation` (refreshed first when due). */
  async token(installation: Installation): Promise<TenantToken> {
    let inst = installation;
    if (this.due(inst)) inst = await this.refresher.refresh(inst);
    const held = this.tokens.get(inst.id);
    if (held && held.updatedAt === inst.updatedAt) return { installation: inst, botToken: held.botToken };
    const opened = this.d.sealer.open(inst.sealed, inst);
    this.tokens.set(inst.id, { botToken: opened.botToken, updatedAt: inst.updatedAt });
    return { installation: inst, botToken: opened.botToken };
  }

  /** Refreshes every active rotating installation due within the margin (the rotation job); returns how many were refreshed. */
  async refreshDue(limit = 1_000): Promise<number> {
    let n = 0;
    for (const meta of await this.d.repo.list(limit)) {
      if (meta.status !== "active" || meta.tokenExpiresAt === null || !this.due(meta)) continue;
      const inst = await this.d.repo.get(meta.id);
      if (!inst) continue;
      try {
        await this.refresher.refresh(inst);
        n++;
      } catch (err) {
        this.d.log.warn("slack installation token refresh failed", {
          installationId: inst.id,
          error: err instanceof Error ? err.message : String(err),
        });
      }
    }
    return n;
  }

  /** The teams this process has seen an org-wide installation serve (events, auth.teams.list). */
  teamsServedBy(installationId: string): string[] {
    return [...this.orgTeams.entries()].filter(([, id]) => id === installationId).map(([team]) => team);
  }

  /** Forgets what is held for an installation (uninstalled, disabled, refreshed, or changed by another replica). */
  forget(installationId: string): void {
    this.tokens.delete(installationId);
    for (const [team, id] of this.orgTeams.entries()) if (id === installationId) this.orgTeams.delete(team);
  }

  private usable(found: Installation | undefined, who: string): Installation {
    if (!found || found.status === "uninstalled")
      throw new InstallationError("unknown_installation", `no installation serves ${who}`);
    if (found.status === "disabled")
      throw new InstallationError(
        "installation_disabled",
        `the installation serving ${who} is disabled (${found.statusReason ?? "operator"})`,
      );
    return found;
  }

  private due(i: { tokenExpiresAt: number | null }): boolean {
    return i.tokenExpiresAt !== null && i.tokenExpiresAt - this.d.clock.now() <= REFRESH_MARGIN_MS;
  }

  private async findOrgServing(teamId: string): Promise<string | undefined> {
    if (!this.d.orgTeams) return undefined;
    // A team nobody serves must not cost a Slack call each time it is named (a made-up id, a flood):
    // the org-wide installs' workspaces are listed at most once a minute; between, the learned map answers.
    const now = this.d.clock.now();
    if (now - this.orgScanAt < ORG_SCAN_EVERY_MS) return undefined;
    this.orgScanAt = now;
    for (const meta of await this.d.repo.list(1_000)) {
      if (!meta.isEnterpriseInstall || meta.status !== "active") continue;
      const inst = await this.d.repo.get(meta.id);
      if (!inst) continue;
      try {
        const teams = await this.d.orgTeams.teamsOf((await this.token(inst)).botToken);
        for (const t of teams) this.orgTeams.set(t, inst.id);
        if (teams.includes(teamId)) return inst.id;
      } catch (err) {
        this.d.log.warn("could not list the teams of an org-wide installation", {
          installationId: inst.id,
          error: err instanceof Error ? err.message : String(err),
        });
      }
    }
    return undefined;
  }
}

function sameScopes(a: readonly string[], b: readonly string[]): boolean {
  return [...a].sort().join(",") === [...b].sort().join(",");
}
