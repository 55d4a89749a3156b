// Which tenant a host token may act in: a pure decision on one screen. A tenant is one Slack
// installation: a workspace (team id `T…`) or an Enterprise Grid org (enterprise id `E…`). A host
// token bound to a team acts in that team's threads only; one bound to an enterprise, in the threads
// of the teams of that org; an unbound token only while the deployment serves a single installation.
// Every fact the decision needs is passed in; a fact that is missing refuses (fail closed).

/** What a SLAUDE_HOST_TOKENS entry binds its token to. */
export type HostBinding =
  | { readonly kind: "team"; readonly teamId: string }
  | { readonly kind: "enterprise"; readonly enterpriseId: string }
  | { readonly kind: "unbound" };

/** A Slack team id as a binding names it (`T…`, then letters, digits, '.', '_' or '-'). */
export const TEAM_BINDING = /^T[A-Za-z0-9._-]{0,63}$/;
/** A Slack enterprise (Grid org) id as a binding names it (`E…`). */
export const ENTERPRISE_BINDING = /^E[A-Za-z0-9._-]{0,63}$/;

/** The binding an entry's id names: a team (`T…`), an enterprise (`E…`), or undefined for anything else. */
export function bindingOfId(id: string | undefined): HostBinding | undefined {
  if (id === undefined) return { kind: "unbound" };
  if (TEAM_BINDING.test(id)) return { kind: "team", teamId: id };
  if (ENTERPRISE_BINDING.test(id)) return { kind: "enterprise", enterpriseId: id };
  return undefined;
}

/**
 * The facts about the thread's tenant that the decision may need. `enterpriseId`: the org the
 * thread's team belongs to (null: none); `liveInstallations`: how many installations the deployment
 * serves. Either may be absent when the binding does not need it; absent and needed refuses.
 */
export interface TenantFacts {
  readonly teamId: string;
  /** False when no active installation serves the team (never installed, disabled, uninstalled): refused whatever the binding. */
  readonly installed?: boolean;
  readonly enterpriseId?: string | null;
  readonly liveInstallations?: number;
}

/** Why a host token may not act in a thread (each maps to one sentence in tenantRefusalMessage). */
export type TenantRefusal =
  | "not_installed"
  | "other_team"
  | "other_enterprise"
  | "enterprise_unknown"
  | "unbound_multi_tenant"
  | "installations_unknown";

/** The verdict on one request: act, or refused with a reason. */
export type TenantVerdict = { readonly ok: true } | { readonly ok: false; readonly reason: TenantRefusal };

/** May a host token with `binding` act in a thread of `tenant.teamId`? Pure; see the file comment. */
export function hostMayAct(binding: HostBinding, tenant: TenantFacts): TenantVerdict {
  const no = (reason: TenantRefusal): TenantVerdict => ({ ok: false, reason });
  if (tenant.installed === false) return no("not_installed");
  switch (binding.kind) {
    case "team":
      return binding.teamId === tenant.teamId ? { ok: true } : no("other_team");
    case "enterprise":
      if (tenant.enterpriseId === undefined) return no("enterprise_unknown");
      return tenant.enterpriseId !== null && tenant.enterpriseId === binding.enterpriseId
        ? { ok: true }
        : no("other_enterprise");
    case "unbound":
      if (tenant.liveInstallations === undefined) return no("installations_unknown");
      return tenant.liveInstallations <= 1 ? { ok: true } : no("unbound_multi_tenant");
  }
}

/** Which facts `hostMayAct` needs for `binding` (so the caller asks the directory only for those). */
export function factsNeeded(binding: HostBinding): { readonly enterprise: boolean; readonly installations: boolean } {
  return { enterprise: binding.kind === "enterprise", installations: binding.kind === "unbound" };
}

/** The HTTP error code of a refusal: `token_not_bound_to_team` when the token must be bound first, else `tenant_forbidden`. */
export function tenantRefusalCode(
  reason: TenantRefusal,
): "tenant_forbidden" | "token_not_bound_to_team" | "tenant_not_installed" {
  if (reason === "not_installed") return "tenant_not_installed";
  return reason === "unbound_multi_tenant" ? "token_not_bound_to_team" : "tenant_forbidden";
}

/** One sentence for a refusal, naming the thread's team (not a secret) and never the token. */
export function tenantRefusalMessage(reason: TenantRefusal, teamId: string): string {
  switch (reason) {
    case "not_installed":
      return `Slack team ${teamId} has no active installation of slaude-connect (never installed, disabled or uninstalled): nothing is served there.`;
    case "other_team":
      return `This host token is bound to another Slack team than ${teamId}: use the token bound to ${teamId} in SLAUDE_HOST_TOKENS.`;
    case "other_enterprise":
      return `This host token is bound to an Enterprise Grid org that team ${teamId} does not belong to: use the token bound to that team or its org.`;
    case "enterprise_unknown":
      return `The org of team ${teamId} is not known, so a token bound to an Enterprise Grid org may not act there.`;
    case "unbound_multi_tenant":
      return "This deployment serves several Slack installations: bind this host token to its team or org in SLAUDE_HOST_TOKENS as <team_id>:<token> or <enterprise_id>:<token>.";
    case "installations_unknown":
      return "The installations of this deployment could not be counted, so a host token bound to no team may not act now; retry, or bind the token to its team.";
  }
}
