import type { ApprovalChannel } from "../approvals/channel.js";
import type { ConsentNotifier } from "../broker/ports.js";
import type { Service } from "../config/registry.js";
import type { LoginNotifier } from "../login/ports.js";
import type { MembershipSource } from "../membership/membership.js";
import type { Connection, LoginSession } from "../store/records.js";

// The ports a workspace implements. Slack is one adapter set (src/slack), the local workspace the
// other (src/workspace/local); the composition root (src/app/workspace.ts) picks one at start-up.

/** Which workspace serves people: Slack, or the local one kept in the store (development only). */
export type WorkspaceKind = "slack" | "local";

/** Who may act as an admin of one team (revoke anyone's connection there, see its audit). Unknown is not admin. */
export interface AdminDirectoryPort {
  isAdmin(teamId: string, userId: string): Promise<boolean>;
}

/** How a connection ended, for the owner's notice; `by` is the actor when it was revoked. */
export interface ConnectionEnd {
  readonly how: "revoked" | "expired";
  readonly by?: string;
}

/**
 * What an owner is told about their connections: ready (after a login), needs a new login (a
 * refused refresh), revoked or expired. Delivery failures throw; callers log them, never fail on them.
 */
export interface OwnerNotices extends LoginNotifier {
  needsLogin(connection: Connection): Promise<void>;
  connectionEnded(connection: Connection, end: ConnectionEnd): Promise<void>;
}

/** The adapter set the app wires, whichever workspace runs. */
export interface WorkspaceAdapters {
  readonly kind: WorkspaceKind;
  readonly membership: MembershipSource;
  readonly approvals: ApprovalChannel;
  readonly consent: ConsentNotifier;
  readonly admins: AdminDirectoryPort;
  readonly notices: OwnerNotices;
}

/** The local workspace's shape, importable from here too. */
export type {
  InboxItem,
  LocalRefusal,
  LocalWorkspace,
  ThreadNote,
  WorkspaceChannel,
  WorkspaceEvent,
  WorkspaceThread,
  WorkspaceUser,
} from "./local/model.js";
export { LOCAL_TEAM_ID } from "./local/model.js";
/** Re-exported so adapters implement `connectionReady` with the login port's own types. */
export type { Connection, LoginSession, Service };
