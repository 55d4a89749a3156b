import type { AuditEvent } from "../audit/event.js";
import type { SealedSecret } from "../vault/aead.js";
import type { InstallationBinding } from "../vault/installation-binding.js";

export type { InstallationBinding, InstallationTokens } from "../vault/installation-binding.js";

// A tenant is one Slack installation of the app: a workspace (team install) or a whole Enterprise
// Grid org (org-wide install, `isEnterpriseInstall`). Its bot token and refresh token are sealed in
// the vault (purpose "installation-encryption", AAD over the ids that decide whose tokens they are).

/** Whether an installation may serve: `active`, `disabled` (an operator or tokens_revoked), `uninstalled` (app_uninstalled; kept only as a tombstone). */
export type InstallationStatus = "active" | "disabled" | "uninstalled";

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
   * Writes an installation (a first install or a reinstall of the same team / enterprise install)
   * with its audit rows, in one transaction. A live row with the same key (team install: the team;
   * org-wide: the enterprise) is replaced: deleted with its ciphertext, so its tokens and scopes are
   * gone, and `i` (sealed for `i.id`) takes its place; tombstones of that key are dropped. `audit`
   * may be a function of the replaced row (undefined for a first install), to tell an install from
   * a reinstall. An operator's disable (`disabled` / `operator`) survives a reinstall: the new row
   * is written disabled with that reason, whatever `i` says (a tenant cannot undo the operator).
   * Refuses (StoreError `invalid_record`) an uninstalled or unsealed `i` and bad ids.
   */
  upsert(
    i: Installation,
    audit: readonly AuditEvent[] | ((previous: InstallationMeta | undefined) => readonly AuditEvent[]),
  ): Promise<Installation>;
  get(id: string): Promise<Installation | undefined>;
  /**
   * The installation serving `q`: the live (active or disabled) org-wide install of the enterprise
   * first, whatever its status, then the team's own; never a tombstone. The caller refuses a disabled one.
   */
  find(q: TenantQuery): Promise<Installation | undefined>;
  /** Every installation not uninstalled, newest first (at most `limit`). */
  list(limit: number): Promise<InstallationMeta[]>;
  /** How many installations are not uninstalled (a host token must be bound when there are several). */
  countLive(): Promise<number>;
  /**
   * Disables (with a reason code) or re-enables a live installation, with its audit rows; false, and
   * nothing written, when the row is gone, uninstalled, or already in that status with that reason.
   */
  setStatus(
    id: string,
    status: Exclude<InstallationStatus, "uninstalled">,
    reason: string | null,
    at: number,
    audit: readonly AuditEvent[],
  ): Promise<boolean>;
  /** Replaces the sealed tokens after a refresh; false when the row is gone or not active. */
  updateTokens(
    id: string,
    sealed: SealedSecret,
    tokenExpiresAt: number | null,
    at: number,
    audit: readonly AuditEvent[],
  ): Promise<boolean>;
  /** Marks uninstalled and wipes the ciphertext; false when it already was. */
  uninstall(id: string, at: number, audit: readonly AuditEvent[]): Promise<boolean>;
  /** Re-encrypts every sealed row with its audit row in one transaction, or changes nothing (keys rotate, which uses Store.reencryptAll to cover connections in the same one); returns the count. */
  reencryptAll(
    reseal: (i: Installation & { sealed: SealedSecret }) => SealedSecret,
    audit: AuditEvent,
  ): Promise<number>;
}

/** Slack OAuth install states: single use, shared by every replica (any replica finishes a flow another started). */
export interface OAuthStateRepo {
  /**
   * Stores a state under its hash (`oauthStateHash`) until `expiresAt`. Expired states are dropped
   * first; then, past `maxLive` (default DEFAULT_MAX_LIVE_OAUTH_STATES), the oldest live ones, so a
   * flood of started installs cannot lock out a new one. Returns how many live states it evicted.
   */
  put(stateHash: string, payload: string, expiresAt: number, at: number, maxLive?: number): Promise<number>;
  /** Deletes and returns the payload of a live state in one atomic statement; undefined when unknown, used or expired (an expired one is deleted too). */
  take(stateHash: string, at: number): Promise<string | undefined>;
  /** Drops expired states; returns how many. */
  expireDue(now: number): Promise<number>;
}

/**
 * The Slack tenants at a glance: how many installations serve, and which do not (by id, with the
 * reason). Detail only: one tenant's broken installation never makes the deployment unready.
 */
export interface InstallationHealth {
  readonly active: number;
  readonly disabled: readonly { readonly id: string; readonly tenant: string; readonly reason: string }[];
}
