import { z } from "zod";

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

/**
 * What an installation's sealed tokens are bound to: its id and every field that decides whose
 * tokens they are (enterprise, team, org-wide or not, the app). A row edited to name another tenant,
 * or its ciphertext copied onto another row, no longer decrypts.
 */
const INSTALLATION_AAD_VERSION = "slaude-connect/installation/v1";

/** The AAD of an installation's tokens: a canonical encoding of its binding plus the key id. */
export function installationAssociatedData(b: InstallationBinding, keyId: string): Buffer {
  return Buffer.from(
    JSON.stringify([INSTALLATION_AAD_VERSION, b.id, b.enterpriseId, b.teamId, b.isEnterpriseInstall, b.appId, keyId]),
  );
}

// Slack tokens are short ASCII strings; anything else in a decrypted document is a malformed row.
const slackToken = z
  .string()
  .min(1)
  .max(4096)
  .regex(/^[\x21-\x7e]+$/);

/** The sealed plaintext: the bot token and, with rotation on, its single-use refresh token (strict). */
export const installationTokensSchema = z
  .object({ botToken: slackToken, refreshToken: slackToken.optional() })
  .strict();
