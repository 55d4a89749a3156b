import type { GrantsAdmin } from "../connections/grants-admin.js";
import type { Store } from "../store/store.js";
import { type ConnectionsModel, connectionsBlocks } from "./blocks.js";
import { MAX_HOME_CHANGES } from "./pin-blocks.js";
import type { SlackApis } from "./tenant-api.js";

/** What the connections view needs: the store, who is an admin, and Slack to publish to. */
export interface HomeDeps {
  readonly apis: SlackApis;
  readonly store: Store;
  readonly grants: Pick<GrantsAdmin, "isAdmin">;
  /** The workspace's name, for the view's footer (unknown: the id alone). */
  readonly tenantName?: (teamId: string) => Promise<string | undefined>;
}

/** One user's connections and grants (and, for admins, everyone's plus recent audit). */
export async function connectionsModel(
  d: Pick<HomeDeps, "store" | "grants" | "tenantName">,
  teamId: string,
  userId: string,
): Promise<ConnectionsModel> {
  const tenant = { teamId, name: await d.tenantName?.(teamId).catch(() => undefined) };
  const [mine, grantsGiven, grantsReceived] = await Promise.all([
    d.store.connections.list({ teamId, ownerUserId: userId, statuses: ["active", "needs_login"] }),
    d.store.grants.list({ teamId, ownerUserId: userId, liveOnly: true }),
    d.store.grants.list({ teamId, borrowerUserId: userId, liveOnly: true }),
  ]);
  if (!(await d.grants.isAdmin(teamId, userId))) return { mine, grantsGiven, grantsReceived, tenant };
  const [all, recentAudit, toolChanges] = await Promise.all([
    d.store.connections.list({ teamId, statuses: ["active", "needs_login"] }),
    d.store.audit.query({ teamId, limit: 15, take: "latest" }),
    d.store.toolPins.undecided({ teamId, limit: MAX_HOME_CHANGES + 1 }),
  ]);
  return { mine, grantsGiven, grantsReceived, admin: { all, recentAudit, toolChanges }, tenant };
}

/** Publishes the App Home tab for a user. */
export async function publishHome(d: HomeDeps, teamId: string, userId: string): Promise<void> {
  await (await d.apis.forTeam(teamId)).publishHome(userId, {
    type: "home",
    blocks: connectionsBlocks(await connectionsModel(d, teamId, userId)),
  });
}
