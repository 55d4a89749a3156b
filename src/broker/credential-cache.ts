import { LRUCache } from "lru-cache";
import type { Clock } from "../clock/clock.js";
import type { CacheLimits } from "../config/env.js";
import type { Redactor } from "../hygiene/redact.js";
import type { RenderedCredential } from "../pool/credential-template.js";
import type { PoolError } from "../pool/errors.js";
import type { Credential } from "../vault/credential.js";

/**
 * A connection's decrypted credential, rendered once through the registry's templates (what the
 * vendor receives) and the redactor built from those same values; valid for one exact ciphertext
 * and binding (`version`).
 */
export interface OpenedCredential {
  readonly version: string;
  readonly credential: Credential;
  /** A PoolError when a template names a value the credential lacks: the launch fails with it. */
  readonly rendered: RenderedCredential | PoolError;
  readonly redactor: Redactor;
}

/** Defaults of SLAUDE_CREDENTIAL_CACHE_MAX and SLAUDE_CREDENTIAL_CACHE_SECONDS. */
export const DEFAULT_CREDENTIAL_CACHE: CacheLimits = { max: 1_000, ttlMs: 900_000 };

/**
 * Decrypted credentials by connection id, bounded in count (least recently used dropped) and age
 * (dropped `ttlMs` after decryption, then decrypted and verified again): plaintext never lingers.
 */
export class CredentialCache {
  private readonly lru: LRUCache<string, OpenedCredential>;

  constructor(limits: CacheLimits = DEFAULT_CREDENTIAL_CACHE, clock: Clock) {
    this.lru = new LRUCache({ max: limits.max, ttl: limits.ttlMs, ttlResolution: 0, perf: { now: () => clock.now() } });
  }

  /** Entries held now (expired ones included until swept). */
  get size(): number {
    return this.lru.size;
  }

  /** The live entry of `connectionId`; never one past its TTL. */
  get(connectionId: string): OpenedCredential | undefined {
    return this.lru.get(connectionId);
  }

  /** Holds `entry` for `connectionId`, replacing any older version. */
  set(connectionId: string, entry: OpenedCredential): void {
    this.lru.set(connectionId, entry);
  }

  /** Forgets a connection's plaintext (ended, or its child dropped). */
  delete(connectionId: string): void {
    this.lru.delete(connectionId);
  }

  /** Drops every entry past its TTL (run by the broker's idle reaper). */
  sweepExpired(): void {
    this.lru.purgeStale();
  }
}
