import type { AuditEvent } from "../../audit/event.js";
import type { SealedSecret } from "../../vault/aead.js";
import type {
  Installation,
  InstallationMeta,
  InstallationRepo,
  InstallationStatus,
  TenantQuery,
} from "../installation-records.js";
import {
  checkInstallation,
  checkStatusReason,
  INSTALLATION_COLUMNS,
  INSTALLATION_META_COLUMNS,
  type InstallationRow,
  installationValues,
  LIVE_INSTALLATION,
  reinstalled,
  sameKeyValue,
  sameKeyWhere,
  toInstallation,
  toInstallationMeta,
} from "../installation-rows.js";
import { type SqlDialect, stmt } from "./dialect.js";
import type { SqlDriver } from "./driver.js";
import { audit, changes, lock, type Program, rows } from "./program.js";

// The installations repository, once for both adapters (src/store/sql/program.ts): one live row
// per team install and per org-wide install (partial unique indexes), tombstones wiped.

const WIPE = "key_id = NULL, token_nonce = NULL, token_ct = NULL, token_tag = NULL, token_expires_at = NULL";

/** The audit rows of an upsert, fixed or made from the row it replaces. */
export type UpsertAudit = readonly AuditEvent[] | ((previous: InstallationMeta | undefined) => readonly AuditEvent[]);

/** Re-seals one installation's tokens under the current key. */
export type Reseal = (i: Installation & { sealed: SealedSecret }) => SealedSecret;

/** One installation by id. */
export function* installationById(id: string): Program<Installation | undefined> {
  const [r] = yield* rows<InstallationRow>(stmt((p) => `SELECT * FROM installations WHERE id = ${p(id)}`));
  return r ? toInstallation(r) : undefined;
}

/** Writes `i` (checked by the caller) in place of the live row of its key, with its audit rows. */
export function* upsertInstallation(i: Installation, events: UpsertAudit): Program<Installation> {
  const key = sameKeyValue(i);
  // Two replicas finishing installs of one team at once: the second waits, then replaces the first.
  yield* lock(`installation:${i.isEnterpriseInstall ? "enterprise" : "team"}:${key}`);
  const [prev] = yield* rows<InstallationRow>({
    text: `SELECT ${INSTALLATION_META_COLUMNS} FROM installations WHERE ${sameKeyWhere(i)}`,
    values: [key],
  });
  // The replaced row goes with its ciphertext (SQLite's secure_delete overwrites it); so do the key's tombstones.
  yield* changes(
    stmt((p) =>
      i.isEnterpriseInstall
        ? `DELETE FROM installations WHERE is_enterprise_install = 1 AND enterprise_id = ${p(key)}`
        : `DELETE FROM installations WHERE is_enterprise_install = 0 AND team_id = ${p(key)}`,
    ),
  );
  const previous = prev ? toInstallationMeta(prev) : undefined;
  const values = installationValues(reinstalled(i, previous));
  yield* changes({
    text: `INSERT INTO installations (${INSTALLATION_COLUMNS}) VALUES (${values.map(() => "?").join(", ")})`,
    values,
  });
  yield* audit(typeof events === "function" ? events(previous) : events);
  return (yield* installationById(i.id))!;
}

/** The live installation serving a tenant: its org-wide install first, then its team's. */
export function* findInstallation(q: TenantQuery): Program<Installation | undefined> {
  if (q.enterpriseId !== null) {
    const [org] = yield* rows<InstallationRow>(
      stmt(
        (p) => `SELECT * FROM installations WHERE is_enterprise_install = 1 AND enterprise_id = ${p(q.enterpriseId)}
          AND ${LIVE_INSTALLATION}`,
      ),
    );
    if (org) return toInstallation(org);
  }
  if (q.teamId === null) return undefined;
  const [team] = yield* rows<InstallationRow>(
    stmt(
      (p) => `SELECT * FROM installations WHERE is_enterprise_install = 0 AND team_id = ${p(q.teamId)}
        AND ${LIVE_INSTALLATION}`,
    ),
  );
  return team ? toInstallation(team) : undefined;
}

/** The live installations, newest first (ties by id bytewise), at most `limit` (clamped to 0..100,000). */
export function* listInstallations(limit: number, d: SqlDialect): Program<InstallationMeta[]> {
  const n = Math.max(0, Math.min(Math.floor(limit), 100_000));
  const found = yield* rows<InstallationRow>(
    stmt(
      (p) => `SELECT ${INSTALLATION_META_COLUMNS} FROM installations WHERE ${LIVE_INSTALLATION}
        ORDER BY installed_at DESC, ${d.bytewise("id")} DESC LIMIT ${p(n)}`,
    ),
  );
  return found.map(toInstallationMeta);
}

/** How many installations are live. */
export function* countLiveInstallations(): Program<number> {
  const [r] = yield* rows<{ n: number }>(
    stmt(() => `SELECT count(*) AS n FROM installations WHERE ${LIVE_INSTALLATION}`),
  );
  return Number(r!.n);
}

/** One conditional UPDATE and, when it matched, its audit rows (a second replica's matches nothing). */
function* changedOne(s: ReturnType<typeof stmt>, events: readonly AuditEvent[]): Program<boolean> {
  const ok = (yield* changes(s)) === 1;
  if (ok) yield* audit(events);
  return ok;
}

/** Sets a live installation's status (checked by the caller); false when it was uninstalled or already so. */
export function* setInstallationStatus(
  id: string,
  status: Exclude<InstallationStatus, "uninstalled">,
  reason: string | null,
  at: number,
  events: readonly AuditEvent[],
): Program<boolean> {
  return yield* changedOne(
    stmt(
      (p) => `UPDATE installations SET status = ${p(status)}, status_reason = ${p(reason)}, updated_at = ${p(at)}
        WHERE id = ${p(id)} AND status <> 'uninstalled'
        AND NOT (status = ${p(status)} AND status_reason IS NOT DISTINCT FROM ${p(reason)})`,
    ),
    events,
  );
}

/** Replaces an active installation's sealed tokens; false when it is not active. */
export function* updateInstallationTokens(
  id: string,
  sealed: SealedSecret,
  tokenExpiresAt: number | null,
  at: number,
  events: readonly AuditEvent[],
): Program<boolean> {
  return yield* changedOne(
    stmt(
      (p) => `UPDATE installations SET key_id = ${p(sealed.keyId)}, token_nonce = ${p(sealed.nonce)},
        token_ct = ${p(sealed.ciphertext)}, token_tag = ${p(sealed.tag)}, token_expires_at = ${p(tokenExpiresAt)},
        updated_at = ${p(at)} WHERE id = ${p(id)} AND status = 'active'`,
    ),
    events,
  );
}

/** Makes a live installation a tombstone, its tokens wiped; false when it was not live. */
export function* uninstallInstallation(id: string, at: number, events: readonly AuditEvent[]): Program<boolean> {
  return yield* changedOne(
    stmt(
      (p) => `UPDATE installations SET status = 'uninstalled', status_reason = NULL, updated_at = ${p(at)}, ${WIPE}
        WHERE id = ${p(id)} AND ${LIVE_INSTALLATION}`,
    ),
    events,
  );
}

/** Re-seals every installation holding tokens, inside the caller's transaction (a throw aborts it whole). */
export function* reencryptInstallations(reseal: Reseal, d: SqlDialect): Program<number> {
  // FOR UPDATE: a replica refreshing a token meanwhile waits, so no row keeps a ciphertext under the old key.
  const all = yield* rows<InstallationRow>(
    stmt(() => `SELECT * FROM installations WHERE token_ct IS NOT NULL ORDER BY ${d.bytewise("id")}${d.forUpdate}`),
  );
  for (const i of all.map(toInstallation)) {
    const next = reseal(i as Installation & { sealed: SealedSecret });
    yield* changes(
      stmt(
        (p) => `UPDATE installations SET key_id = ${p(next.keyId)}, token_nonce = ${p(next.nonce)},
          token_ct = ${p(next.ciphertext)}, token_tag = ${p(next.tag)} WHERE id = ${p(i.id)}`,
      ),
    );
  }
  return all.length;
}

/** A key rotation of every installation, audited once. */
export function* reencryptAllInstallations(reseal: Reseal, event: AuditEvent, d: SqlDialect): Program<number> {
  const n = yield* reencryptInstallations(reseal, d);
  yield* audit([event]);
  return n;
}

/** The installations repository on either adapter's driver; the writes are checked before they run. */
export class SqlInstallationRepo implements InstallationRepo {
  constructor(protected readonly driver: SqlDriver) {}

  async upsert(i: Installation, events: UpsertAudit): Promise<Installation> {
    checkInstallation(i);
    return this.driver.write(upsertInstallation(i, events));
  }
  get(id: string): Promise<Installation | undefined> {
    return this.driver.read(installationById(id));
  }
  find(q: TenantQuery): Promise<Installation | undefined> {
    return this.driver.read(findInstallation(q));
  }
  list(limit: number): Promise<InstallationMeta[]> {
    return this.driver.read(listInstallations(limit, this.driver.dialect));
  }
  countLive(): Promise<number> {
    return this.driver.read(countLiveInstallations());
  }
  async setStatus(
    id: string,
    status: Exclude<InstallationStatus, "uninstalled">,
    reason: string | null,
    at: number,
    events: readonly AuditEvent[],
  ): Promise<boolean> {
    checkStatusReason(status, reason);
    return this.driver.write(setInstallationStatus(id, status, reason, at, events));
  }
  updateTokens(
    id: string,
    sealed: SealedSecret,
    tokenExpiresAt: number | null,
    at: number,
    events: readonly AuditEvent[],
  ): Promise<boolean> {
    return this.driver.write(updateInstallationTokens(id, sealed, tokenExpiresAt, at, events));
  }
  uninstall(id: string, at: number, events: readonly AuditEvent[]): Promise<boolean> {
    return this.driver.write(uninstallInstallation(id, at, events));
  }
  reencryptAll(reseal: Reseal, event: AuditEvent): Promise<number> {
    return this.driver.write(reencryptAllInstallations(reseal, event, this.driver.dialect));
  }
}
