import type { AdminEntry } from "../config/env.js";

// SLAUDE_ADMINS across tenants: `<team_id>:<user_id>` makes a user an admin of that team only. A bare
// user id names no team, so it counts only while the deployment has a single installation; with
// several it would make the user an admin of every tenant, so it counts nowhere (fail closed).

/** Whether SLAUDE_ADMINS makes `userId` an admin of `teamId`; `singleTenant` is whether there is at most one installation. */
export function listedAdmin(entries: readonly AdminEntry[], teamId: string, userId: string, singleTenant: boolean): boolean {
  return entries.some((e) => e.userId === userId && (e.teamId === undefined ? singleTenant : e.teamId === teamId));
}

/** The bare (team-less) entries: with several installations doctor and start-up name them (never their value). */
export function bareAdminEntries(entries: readonly AdminEntry[]): number {
  return entries.filter((e) => e.teamId === undefined).length;
}
