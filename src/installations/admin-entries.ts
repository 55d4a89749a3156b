import type { AdminEntry } from "../config/env.js";

// SLAUDE_ADMINS across tenants: `<team_id>:<user_id>` makes a user an admin of that team only. A bare
// user id names no team, so it counts only while the deployment has a single installation; with
// several it would make the user an admin of every tenant, so it counts nowhere (fail closed).

/** Whether SLAUDE_ADMINS makes `userId` an admin of `teamId`; `singleTenant` is whether there is at most one installation. */
export function listedAdmin(
  entries: readonly AdminEntry[],
  teamId: string,
  userId: string,
  singleTenant: boolean,
): boolean {
  return entries.some((e) => e.userId === userId && (e.teamId === undefined ? singleTenant : e.teamId === teamId));
}

/** The bare (team-less) entries: with several installations doctor and start-up name them (never their value). */
export function bareAdminEntries(entries: readonly AdminEntry[]): number {
  return entries.filter((e) => e.teamId === undefined).length;
}

/** Bare SLAUDE_ADMINS entries while several installations are served: a warning, and an error (no start) in production. */
export function bareAdminFinding(
  admins: readonly AdminEntry[],
  liveInstallations: number,
  production: boolean,
): { level: "warn" | "error"; message: string; fix: string } | undefined {
  const bare = bareAdminEntries(admins);
  if (!bare || liveInstallations <= 1) return undefined;
  return {
    level: production ? "error" : "warn",
    message: `${bare} SLAUDE_ADMINS entr${bare === 1 ? "y names" : "ies name"} no team while ${liveInstallations} installations are served: they make nobody an admin${production ? ", and production does not start" : ""}`,
    fix: "write each entry as <team_id>:<user_id>; see docs/slack-setup.md",
  };
}
