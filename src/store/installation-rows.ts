import { createHash } from "node:crypto";
import type { SealedSecret } from "../vault/aead.js";
import { StoreError } from "./errors.js";
import type { Installation, InstallationMeta, InstallationStatus } from "./installation-records.js";

// What both adapters share about the installations and oauth_states tables: the row shape, the
// mapping to domain objects (snake_case stays here) and the checks a write must pass first.

/** An installations row as both adapters read it (the sealed tokens in four columns, all null once wiped). */
export interface InstallationRow {
  id: string;
  enterprise_id: string | null;
  enterprise_name: string | null;
  team_id: string | null;
  team_name: string | null;
  /** 0/1 in both dialects. */
  is_enterprise_install: number;
  app_id: string;
  bot_id: string;
  bot_user_id: string;
  scopes: string;
  status: InstallationStatus;
  status_reason: string | null;
  key_id: string | null;
  token_nonce: Buffer | null;
  token_ct: Buffer | null;
  token_tag: Buffer | null;
  token_expires_at: number | null;
  installed_by: string | null;
  installed_at: number;
  updated_at: number;
}

/** The columns of an installation other than its sealed tokens (what listings read). */
export const INSTALLATION_META_COLUMNS =
  "id, enterprise_id, enterprise_name, team_id, team_name, is_enterprise_install, app_id, bot_id, bot_user_id, scopes, status, status_reason, token_expires_at, installed_by, installed_at, updated_at";

/** Every column, in the order `installationValues` gives them. */
export const INSTALLATION_COLUMNS = `${INSTALLATION_META_COLUMNS}, key_id, token_nonce, token_ct, token_tag`;

/** Rows that serve or can serve again (active or disabled): what the live unique indexes cover. */
export const LIVE_INSTALLATION = "status <> 'uninstalled'";

/** The live row with the same key as `i`: its org-wide install by enterprise, or its team install by team. */
export function sameKeyWhere(i: Pick<Installation, "isEnterpriseInstall">): string {
  return i.isEnterpriseInstall
    ? `is_enterprise_install = 1 AND enterprise_id = ? AND ${LIVE_INSTALLATION}`
    : `is_enterprise_install = 0 AND team_id = ? AND ${LIVE_INSTALLATION}`;
}

/** The value `sameKeyWhere` compares. */
export function sameKeyValue(i: Pick<Installation, "isEnterpriseInstall" | "enterpriseId" | "teamId">): string {
  return (i.isEnterpriseInstall ? i.enterpriseId : i.teamId)!;
}

/** Maps a row (any columns beyond the meta ones ignored) to an installation without its tokens. */
export function toInstallationMeta(
  r: Omit<InstallationRow, "key_id" | "token_nonce" | "token_ct" | "token_tag">,
): InstallationMeta {
  return {
    id: r.id,
    enterpriseId: r.enterprise_id,
    enterpriseName: r.enterprise_name,
    teamId: r.team_id,
    teamName: r.team_name,
    isEnterpriseInstall: r.is_enterprise_install === 1,
    appId: r.app_id,
    botId: r.bot_id,
    botUserId: r.bot_user_id,
    scopes: r.scopes === "" ? [] : r.scopes.split(","),
    status: r.status,
    statusReason: r.status_reason,
    tokenExpiresAt: r.token_expires_at,
    installedBy: r.installed_by,
    installedAt: r.installed_at,
    updatedAt: r.updated_at,
  };
}

/** Maps a full row to the domain object, sealed tokens included (null when wiped). */
export function toInstallation(r: InstallationRow): Installation {
  const sealed: SealedSecret | null =
    r.token_ct && r.token_nonce && r.token_tag && r.key_id
      ? { keyId: r.key_id, nonce: r.token_nonce, ciphertext: r.token_ct, tag: r.token_tag }
      : null;
  return { ...toInstallationMeta(r), sealed };
}

/** The reason code of an operator's disable: a reinstall keeps it (see InstallationRepo.upsert). */
export const OPERATOR_DISABLE = "operator";

/** What a reinstall writes: `i`, still disabled when the row it replaces was disabled by the operator. */
export function reinstalled(
  i: Installation,
  previous: Pick<InstallationMeta, "status" | "statusReason"> | undefined,
): Installation {
  return previous?.status === "disabled" && previous.statusReason === OPERATOR_DISABLE
    ? { ...i, status: "disabled", statusReason: OPERATOR_DISABLE }
    : i;
}

/** The values of every column of `i`, in INSTALLATION_COLUMNS order (positional, for both dialects). */
export function installationValues(i: Installation): unknown[] {
  const s = i.sealed;
  return [
    i.id,
    i.enterpriseId,
    i.enterpriseName,
    i.teamId,
    i.teamName,
    i.isEnterpriseInstall ? 1 : 0,
    i.appId,
    i.botId,
    i.botUserId,
    i.scopes.join(","),
    i.status,
    i.statusReason,
    i.tokenExpiresAt,
    i.installedBy,
    i.installedAt,
    i.updatedAt,
    s?.keyId ?? null,
    s?.nonce ?? null,
    s?.ciphertext ?? null,
    s?.tag ?? null,
  ];
}

/** How many scopes one installation may carry (Slack's whole scope list is far shorter). */
export const MAX_INSTALLATION_SCOPES = 256;

const SLACK_ID = /^[A-Za-z0-9_]{1,64}$/;
const OUR_ID = /^[A-Za-z0-9_-]{1,128}$/;
const SCOPE = /^[a-z][a-z0-9_.:-]{0,63}$/;
const REASON = /^[a-z][a-z0-9_]{0,63}$/;

function refuse(what: string): never {
  throw new StoreError("invalid_record", `installation refused: ${what}`);
}

function checkTime(name: string, v: number | null): void {
  if (v !== null && !Number.isSafeInteger(v)) refuse(`${name} must be an integer time in ms`);
}

/** A status reason the store keeps: a short code (`tokens_revoked`, `operator`, `refresh_failed`), never free text. */
export function checkStatusReason(status: InstallationStatus, reason: string | null): void {
  if (status === "active" && reason !== null) refuse("an active installation has no status reason");
  if (status === "disabled" && reason === null) refuse("a disabled installation needs a status reason");
  if (reason !== null && !REASON.test(reason)) refuse("the status reason must be a short code ([a-z0-9_], at most 64)");
}

/** Refuses (StoreError `invalid_record`) an installation the tables must not hold; messages name fields, never values. */
export function checkInstallation(i: Installation): void {
  if (!OUR_ID.test(i.id)) refuse("id must be 1-128 of [A-Za-z0-9_-]");
  for (const [name, v] of [
    ["enterpriseId", i.enterpriseId],
    ["teamId", i.teamId],
  ] as const)
    if (v !== null && !SLACK_ID.test(v)) refuse(`${name} is not a Slack id`);
  for (const [name, v] of [
    ["appId", i.appId],
    ["botId", i.botId],
    ["botUserId", i.botUserId],
  ] as const)
    if (!SLACK_ID.test(v)) refuse(`${name} is not a Slack id`);
  if (i.isEnterpriseInstall ? i.enterpriseId === null : i.teamId === null)
    refuse(i.isEnterpriseInstall ? "an org-wide install needs its enterprise id" : "a team install needs its team id");
  for (const [name, v] of [
    ["teamName", i.teamName],
    ["enterpriseName", i.enterpriseName],
    ["installedBy", i.installedBy],
  ] as const)
    if (v !== null && v.length > 256) refuse(`${name} is longer than 256`);
  if (i.scopes.length > MAX_INSTALLATION_SCOPES) refuse(`more than ${MAX_INSTALLATION_SCOPES} scopes`);
  for (const s of i.scopes) if (!SCOPE.test(s)) refuse("a scope is not a Slack scope name");
  if (i.status === "uninstalled")
    refuse("an installation is written active or disabled (uninstall() makes a tombstone)");
  checkStatusReason(i.status, i.statusReason);
  if (!i.sealed) refuse("a live installation holds its sealed tokens");
  checkTime("installedAt", i.installedAt);
  checkTime("updatedAt", i.updatedAt);
  checkTime("tokenExpiresAt", i.tokenExpiresAt);
}

/** The hash a Slack OAuth state is stored under (SHA-256, hex): the state itself never reaches the database. */
export function oauthStateHash(state: string): string {
  return createHash("sha256").update("slaude-connect/oauth-state/v1\0").update(state).digest("hex");
}

/** The default cap on live OAuth states (each is one install started in the last few minutes). */
export const DEFAULT_MAX_LIVE_OAUTH_STATES = 10_000;

/** The largest state payload kept (Bolt's install options: scopes, redirect URI, metadata). */
export const MAX_OAUTH_STATE_PAYLOAD = 8 * 1024;

/** Refuses a write to oauth_states the table must not hold: a raw state instead of its hash, an oversized payload, a bad cap or expiry. */
export function checkOAuthState(
  stateHash: string,
  payload: string,
  expiresAt: number,
  at: number,
  maxLive: number,
): void {
  const no = (what: string): never => {
    throw new StoreError("invalid_record", `OAuth state refused: ${what}`);
  };
  if (!/^[0-9a-f]{64}$/.test(stateHash)) no("the key must be the state's SHA-256 hash (oauthStateHash), not the state");
  if (Buffer.byteLength(payload) > MAX_OAUTH_STATE_PAYLOAD) no(`payload is over ${MAX_OAUTH_STATE_PAYLOAD} bytes`);
  if (!Number.isSafeInteger(expiresAt) || !Number.isSafeInteger(at) || expiresAt <= at)
    no("it must expire after it is stored");
  if (!Number.isSafeInteger(maxLive) || maxLive < 1) no("the cap on live states must be a positive integer");
}
