import type { AuditEvent } from "../audit/event.js";
import type { SealedSecret } from "../vault/aead.js";

// A tenant is one Slack installation of the app: a workspace (team install) or a whole Enterprise
// Grid org (org-wide install, `isEnterpriseInstall`). Its bot token and refresh token are sealed in
// the vault (purpose "installation-encryption", AAD over the ids that decide whose tokens they are).

/** Whether an installation may serve: `active`, `disabled` (an operator or tokens_revoked), `uninstalled` (app_uninstalled; kept only as a tombstone). */
export type InstallationStatus = "active" | "disabled" | "uninstalled";

/** The tokens of an installation, in plaintext only in memory, never logged or stored. */
export interface InstallationTokens {
  readonly botToken: string;
  /** Present when token rotation is on: single-use, exchanged for a new pair before `expiresAt`. */
  readonly refreshToken?: string;
}

/** The fields that bind an installation's sealed tokens to its row (the AAD, with the key id). */
export interface InstallationBinding {
  readonly id: string;
  readonly enterpriseId: string | null;
  readonly teamId: string | null;
  readonly isEnterpriseInstall: boolean;
  readonly appId: string;
}

/** One installation as stored: ids, scopes, status and the sealed tokens. */
export interface Installation extends InstallationBinding {
  readonly teamName: string | null;
  readonly enterpriseName: string | null;
  readonly botId: string;
  readonly botUserId: string;
  readonly scopes: readonly string[];
  readonly status: InstallationStatus;
  /** Why it is disabled (`tokens_revoked`, `operator`, `refresh_failed`), else null. */
  readonly statusReason: string | null;
  /** Null once wiped (uninstalled). */
  readonly sealed: SealedSecret | null;
  /** When the bot token expires (rotation on), else null. */
  readonly tokenExpiresAt: number | null;
  readonly installedBy: string | null;
  readonly installedAt: number;
  readonly updatedAt: number;
}

/** An installation without its sealed tokens: what listings and the operator CLI see. */
export type InstallationMeta = Omit<Installation, "sealed">;

/** The tenant an event or a thread belongs to: an org-wide install is found by enterprise first, then a team install. */
export interface TenantQuery {
  readonly enterpriseId: string | null;
  readonly teamId: string | null;
}

/** The stored installations: one live row per team install, one per org-wide install (by enterprise). */
export interface InstallationRepo {
  /**
   * Writes an installation (a first install or a reinstall of the same team / enterprise install),
   * replacing the tokens and scopes of a live row with the same key, with its audit rows.
   */
  upsert(i: Installation, audit: readonly AuditEvent[]): Promise<Installation>;
  get(id: string): Promise<Installation | undefined>;
  /** The installation serving `q`: the org-wide install of the enterprise first, then the team's own; any status. */
  find(q: TenantQuery): Promise<Installation | undefined>;
  /** Every installation not uninstalled, newest first (at most `limit`). */
  list(limit: number): Promise<InstallationMeta[]>;
  /** How many installations are not uninstalled (a host token must be bound when there are several). */
  countLive(): Promise<number>;
  setStatus(id: string, status: InstallationStatus, reason: string | null, at: number, audit: readonly AuditEvent[]): Promise<boolean>;
  /** Replaces the sealed tokens after a refresh; false when the row is gone or not active. */
  updateTokens(id: string, sealed: SealedSecret, tokenExpiresAt: number | null, at: number, audit: readonly AuditEvent[]): Promise<boolean>;
  /** Marks uninstalled and wipes the ciphertext; false when it already was. */
  uninstall(id: string, at: number, audit: readonly AuditEvent[]): Promise<boolean>;
  /** Re-encrypts every sealed row in one transaction (keys rotate); returns the count. */
  reencryptAll(reseal: (i: Installation & { sealed: SealedSecret }) => SealedSecret, audit: AuditEvent): Promise<number>;
}

/** Slack OAuth install states: single use, shared by every replica (any replica finishes a flow another started). */
export interface OAuthStateRepo {
  /** Stores a state (kept as a hash) until `expiresAt`; the state store caps how many are live. */
  put(stateHash: string, payload: string, expiresAt: number, at: number): Promise<void>;
  /** Deletes and returns the payload of a live state; undefined when unknown, used or expired. */
  take(stateHash: string, at: number): Promise<string | undefined>;
  /** Drops expired states; returns how many. */
  expireDue(now: number): Promise<number>;
}
