import type { Card } from "../domain/card.js";
import type { SealedSecret } from "../vault/aead.js";

/** A connection's scope: one thread (default), the owner everywhere, or the broker's shared identity. */
export type ConnectionScope = "thread" | "user" | "shared";

/** A connection's lifecycle state. Only `active` connections run calls. */
export type ConnectionStatus = "active" | "needs_login" | "revoked" | "expired";

/** One owner's credential for one service in one scope; the secret stays sealed. */
export interface Connection {
  readonly id: string;
  readonly teamId: string;
  readonly ownerUserId: string | null;
  readonly service: string;
  readonly scope: ConnectionScope;
  readonly channelId: string | null;
  readonly threadTs: string | null;
  readonly status: ConnectionStatus;
  readonly sealed: SealedSecret | null;
  readonly label: string | null;
  readonly createdBy: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly expiresAt: number;
  readonly endedAt: number | null;
  readonly endedReason: string | null;
}

/** What it takes to create a connection (the id is chosen by the caller so the AAD can bind it). */
export interface NewConnection {
  readonly id: string;
  readonly teamId: string;
  readonly ownerUserId: string | null;
  readonly service: string;
  readonly scope: ConnectionScope;
  readonly channelId: string | null;
  readonly threadTs: string | null;
  readonly sealed: SealedSecret;
  readonly label: string | null;
  readonly createdBy: string;
  readonly createdAt: number;
  readonly expiresAt: number;
}

/** Standing permission for a borrower to use an owner's connection in one thread. */
export interface Grant {
  readonly id: string;
  readonly connectionId: string;
  readonly teamId: string;
  readonly channelId: string;
  readonly threadTs: string;
  readonly ownerUserId: string;
  readonly borrowerUserId: string;
  readonly service: string;
  readonly createdAt: number;
  readonly revokedAt: number | null;
  readonly revokedBy: string | null;
}

/** The state of an approval: pending until decided, then consumed at most once. */
export type ApprovalStatus = "pending" | "allowed_thread" | "allowed_once" | "denied" | "expired" | "consumed";

/** A question to an owner, bound to (connection, borrower, service, tool, args hash, nonce). */
export interface Approval {
  readonly id: string;
  readonly nonce: string;
  readonly connectionId: string;
  readonly teamId: string;
  readonly channelId: string;
  readonly threadTs: string;
  readonly ownerUserId: string;
  readonly borrowerUserId: string;
  readonly service: string;
  readonly tool: string;
  readonly argsHash: string;
  readonly status: ApprovalStatus;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly decidedAt: number | null;
  readonly decidedBy: string | null;
  readonly cardChannel: string | null;
  readonly cardTs: string | null;
}

/** A login flow's state. */
export type LoginStatus = "minted" | "opened" | "completed" | "cancelled" | "expired" | "failed";

/** One login flow, keyed by the hash of its one-time link token. */
export interface LoginSession {
  readonly id: string;
  readonly tokenHash: string;
  readonly teamId: string;
  readonly userId: string;
  readonly service: string;
  readonly scope: ConnectionScope;
  readonly channelId: string | null;
  readonly threadTs: string | null;
  readonly status: LoginStatus;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly openedAt: number | null;
  readonly endedAt: number | null;
  readonly connectionId: string | null;
  /** Hash of the session secret of the browser that opened the link; null until opened. */
  readonly viewerHash: string | null;
}

/** A service's cached tools/list for one team, redacted with the credential of the connection that fetched it. */
export interface ToolMetadata {
  readonly teamId: string;
  readonly service: string;
  readonly contentHash: string;
  readonly tools: readonly unknown[];
  readonly fetchedAt: number;
}

/** A person of the local workspace (development only). */
export interface WorkspaceUserRecord {
  readonly id: string;
  readonly name: string;
  readonly admin: boolean;
}

/** A channel of the local workspace with its current members. */
export interface WorkspaceChannelRecord {
  readonly id: string;
  readonly name: string;
  readonly members: readonly string[];
}

/** What a consent card's Continue mints a login link for. */
export interface ConsentSubject {
  readonly service: string;
  readonly channelId: string | null;
  readonly threadTs: string | null;
}

/** One card in one local user's inbox; `card` is parsed when read back. */
export interface InboxRecord {
  readonly id: string;
  readonly teamId: string;
  readonly userId: string;
  readonly at: number;
  readonly card: Card;
  readonly approvalId: string | null;
  readonly subject: ConsentSubject | null;
  readonly state: "open" | "settled";
}

/**
 * Where a tool's definition stands against its pin: `pinned` (served as accepted), `quarantined`
 * (served differently since; refused until an admin decides), `new` (appeared after the service was
 * first seen; unreviewed: refused, or with `trustNewTools` run under the fail-closed class), `rejected` (an admin refused the change).
 */
export type PinStatus = "pinned" | "quarantined" | "new" | "rejected";

/** One tool's pin in one team: the accepted definition and, while one is waiting, the changed one. */
export interface ToolPin {
  readonly teamId: string;
  readonly service: string;
  readonly tool: string;
  readonly status: PinStatus;
  /** SHA-256 of the accepted definition's canonical JSON; null for a tool never accepted. */
  readonly pinnedHash: string | null;
  /** The accepted definition as indented JSON, cut to a fixed size (for the admin's diff). */
  readonly pinnedDefinition: string | null;
  /** The definition waiting for a decision (or the rejected one); null when none. */
  readonly pendingHash: string | null;
  readonly pendingDefinition: string | null;
  readonly firstSeenAt: number;
  /** When the status or the pending definition last changed. */
  readonly changedAt: number;
  readonly decidedAt: number | null;
  readonly decidedBy: string | null;
}
