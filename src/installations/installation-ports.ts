import type { AuditEvent } from "../audit/event.js";
import type { Clock } from "../clock/clock.js";
import type { Logger } from "../log/logger.js";
import type { RefreshLock } from "../login/oauth/refresh-lock.js";
import type {
  Installation,
  InstallationBinding,
  InstallationRepo,
  InstallationTokens,
} from "../store/installation-records.js";
import type { SealedSecret } from "../vault/aead.js";

// What the tenants' service (installations.ts) is given and gives: the vault's sealer, Slack's
// token rotation and org team listing as ports, a completed install as it arrives, a bot token
// as it is handed out, and the service's dependencies.

/** Seals and opens an installation's tokens (the vault's installation purpose). */
export interface InstallationSealer {
  seal(tokens: InstallationTokens, binding: InstallationBinding): SealedSecret;
  /** Throws VaultError on a moved row, edited ids, an unknown key or a wiped row. */
  open(sealed: SealedSecret | null, binding: InstallationBinding): InstallationTokens;
}

/** The vault's installation purpose as the sealer port. */
export function vaultSealer(vault: {
  sealInstallation: InstallationSealer["seal"];
  openInstallation: InstallationSealer["open"];
}): InstallationSealer {
  return { seal: (t, b) => vault.sealInstallation(t, b), open: (s, b) => vault.openInstallation(s, b) };
}

/** Slack's token rotation (oauth.v2.access with grant_type=refresh_token): a new pair for a single-use refresh token. */
export interface TokenRotation {
  refresh(refreshToken: string): Promise<{ botToken: string; refreshToken: string; expiresInSeconds: number }>;
}

/** The teams an org-wide install serves (auth.teams.list with its token); throws when Slack cannot say. */
export interface OrgTeams {
  teamsOf(botToken: string): Promise<readonly string[]>;
}

/** A completed install (from Slack's OAuth flow, or the single configured bot token), tokens in plaintext. */
export interface InstallInput {
  readonly enterpriseId: string | null;
  readonly enterpriseName: string | null;
  /** Null for an org-wide install. */
  readonly teamId: string | null;
  readonly teamName: string | null;
  readonly isEnterpriseInstall: boolean;
  readonly appId: string;
  readonly botId: string;
  readonly botUserId: string;
  readonly scopes: readonly string[];
  readonly tokens: InstallationTokens;
  readonly tokenExpiresAt: number | null;
  readonly installedBy: string | null;
}

/** A bot token ready to use, with the installation it belongs to. */
export interface TenantToken {
  readonly installation: Installation;
  readonly botToken: string;
}

/** What the service needs. */
export interface InstallationsDeps {
  readonly repo: InstallationRepo;
  readonly sealer: InstallationSealer;
  readonly clock: Clock;
  readonly log: Logger;
  readonly audit: { append(events: readonly AuditEvent[]): Promise<void> };
  /** Absent: installations without rotation only (a refresh due fails closed). */
  readonly rotation?: TokenRotation;
  readonly orgTeams?: OrgTeams;
  /** Shared by replicas on PostgreSQL, so each refresh token is presented to Slack once. */
  readonly lock: RefreshLock;
  /** Told of each refresh's outcome (the metric). */
  readonly onRefresh?: (outcome: "ok" | "failed") => void;
}
