import type { AdminEntry } from "../config/env.js";
import { bareAdminEntries } from "./admin-entries.js";

// Settings that stop being safe once a deployment serves several tenants: a host token bound to no
// team could act in every tenant's threads, and a bare SLAUDE_ADMINS id would make one user an
// admin everywhere. With one installation both are what a single workspace expects.

/** A setting that crosses tenants, for doctor and start-up (never a token's value). */
export interface TenantConfigProblem {
  readonly what: "unbound_host_tokens" | "bare_admins";
  readonly message: string;
  readonly fix: string;
}

/** What crosses tenants when `liveInstallations` tenants are served; empty with at most one. */
export function tenantConfigProblems(c: { readonly hostTokens: readonly string[]; readonly hostTokenTeams: ReadonlyMap<string, string>; readonly admins: readonly AdminEntry[] }, liveInstallations: number): TenantConfigProblem[] {
  if (liveInstallations <= 1) return [];
  const out: TenantConfigProblem[] = [];
  const unbound = c.hostTokens.filter((t) => !c.hostTokenTeams.has(t)).length;
  if (unbound) {
    out.push({
      what: "unbound_host_tokens",
      message: `${unbound} host token(s) in SLAUDE_HOST_TOKENS are bound to no team, and ${liveInstallations} Slack installations are served: such a token is refused (it could act in every tenant's threads)`,
      fix: "write each entry as <team_id>:<token> (or <enterprise_id>:<token> for an org-wide install); see docs/host-integration.md",
    });
  }
  const bare = bareAdminEntries(c.admins);
  if (bare) {
    out.push({
      what: "bare_admins",
      message: `${bare} SLAUDE_ADMINS entr${bare === 1 ? "y names" : "ies name"} no team, and ${liveInstallations} Slack installations are served: they make nobody an admin`,
      fix: "write each entry as <team_id>:<user_id>; see docs/slack-setup.md",
    });
  }
  return out;
}
