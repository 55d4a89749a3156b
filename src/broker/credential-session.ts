import type { Service } from "../config/registry.js";
import { Redactor } from "../hygiene/redact.js";
import { type RenderedCredential, renderCredential, renderedValues } from "../pool/credential-template.js";
import { PoolError } from "../pool/errors.js";
import type { PoolLease } from "../pool/pool.js";
import type { Connection } from "../store/records.js";
import { bindingOf } from "../vault/binding.js";
import { type Credential, credentialSecrets } from "../vault/credential.js";
import { VaultError } from "../vault/errors.js";
import { CredentialCache, type OpenedCredential } from "./credential-cache.js";
import type { BrokerDeps } from "./deps.js";

// The credential stage of a call: the chosen row's credential decrypted once (memoised per exact
// ciphertext and binding), refreshed when it is OAuth and near expiry (the refreshed credential is
// used as returned, never decrypted again), rendered once through the registry's templates, and
// the redactor built from those same rendered values: what the vendor gets is what is hidden.

/** A call's credential: the row it was read from and what was opened from it. */
export interface CredentialSession {
  readonly connection: Connection;
  readonly opened: OpenedCredential;
}

/** The memo key: any change to the sealed bytes or a bound field means decrypt (and verify) again. */
function versionOf(conn: Connection): string {
  const s = conn.sealed;
  if (!s) throw new VaultError("wiped", "connection has no credential");
  const b = bindingOf(conn);
  return [
    s.keyId,
    s.nonce.toString("hex"),
    s.tag.toString("hex"),
    s.ciphertext.length,
    b.teamId,
    b.ownerUserId,
    b.service,
    b.scope,
    b.channelId,
    b.threadTs,
  ].join("|");
}

/** Opens, refreshes and caches credentials for calls; holds the bounded plaintext cache. */
export class CredentialSessions {
  /** Decrypted credentials, bounded in count and age (SLAUDE_CREDENTIAL_CACHE_*). */
  readonly opened: CredentialCache;

  constructor(private readonly d: Pick<BrokerDeps, "vault" | "store" | "clock" | "refresher" | "credentialCache">) {
    this.opened = new CredentialCache(d.credentialCache, d.clock);
  }

  /** The session of `conn` (decrypted only when this ciphertext was not opened before); throws VaultError. */
  open(conn: Connection, service: Service): CredentialSession {
    const version = versionOf(conn);
    const hit = this.opened.get(conn.id);
    if (hit && hit.version === version) return { connection: conn, opened: hit };
    const credential = this.d.vault.openCredential(conn.sealed, bindingOf(conn));
    return this.adopt(conn, service, version, credential);
  }

  /**
   * The session, with its OAuth credential refreshed first when it expires within the refresher's
   * skew. The refreshed credential is used as returned; the row is read again only for its state and
   * new sealed bytes (the version the child is started with). Undefined: the connection ended meanwhile.
   * Throws the refresher's OAuthError or a VaultError.
   */
  async fresh(s: CredentialSession, service: Service): Promise<CredentialSession | undefined> {
    const cred = s.opened.credential;
    const r = this.d.refresher;
    if (!r || cred.kind !== "oauth" || cred.expiresAt === undefined || cred.expiresAt - this.d.clock.now() > r.skewMs)
      return s;
    const credential = await r.fresh({ id: s.connection.id });
    const row = await this.d.store.connections.get(s.connection.id);
    if (row?.status !== "active") return undefined;
    return this.adopt(row, service, versionOf(row), credential);
  }

  /** The pool lease of a session: its row, version, rendered credential and redactor. */
  lease(s: CredentialSession, service: Service): PoolLease {
    const { rendered, redactor, version } = s.opened;
    return {
      connection: s.connection,
      service,
      version,
      redactor,
      secrets: () => {
        if (rendered instanceof PoolError) throw rendered;
        return rendered;
      },
    };
  }

  /** The redactor of a connection's credential; an unopenable row redacts nothing (and fails later). */
  redactorFor(conn: Connection, service: Service): Redactor {
    try {
      return this.open(conn, service).opened.redactor;
    } catch {
      return new Redactor([]);
    }
  }

  /** Drops a connection's plaintext from memory. */
  forget(connectionId: string): void {
    this.opened.delete(connectionId);
  }

  private adopt(conn: Connection, service: Service, version: string, credential: Credential): CredentialSession {
    let rendered: RenderedCredential | PoolError;
    try {
      rendered = renderCredential(service, credential);
    } catch (err) {
      // An incomplete credential fails at launch; redaction still covers the raw values.
      rendered =
        err instanceof PoolError
          ? err
          : new PoolError(
              "credential_incomplete",
              "the stored credential does not fit the service registry's templates",
            );
    }
    const opened: OpenedCredential = {
      version,
      credential,
      rendered,
      redactor: redactorOf(credential, rendered, service),
    };
    this.opened.set(conn.id, opened);
    return { connection: conn, opened };
  }
}

/** The redactor of a credential: its secret values and the rendered values the vendor receives. */
function redactorOf(cred: Credential, rendered: RenderedCredential | PoolError, service: Service): Redactor {
  const values = rendered instanceof PoolError ? [] : renderedValues(rendered);
  // Pasted fields the registry marks non-secret (an email, a user name) are redacted only inside secret pairs.
  const capture = service.entry.capture;
  const open =
    capture.strategy === "paste"
      ? new Set(capture.fields.filter((f) => !f.secret).map((f) => f.name))
      : new Set<string>();
  if (cred.kind === "fields" && open.size) {
    const secrets = Object.entries(cred.fields)
      .filter(([k]) => !open.has(k))
      .map(([, v]) => v);
    const companions = Object.entries(cred.fields)
      .filter(([k]) => open.has(k))
      .map(([, v]) => v);
    return new Redactor(
      secrets,
      values.filter((r) => !companions.includes(r)),
      companions,
    );
  }
  return new Redactor(credentialSecrets(cred), values);
}
