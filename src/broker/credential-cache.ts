import { LRUCache } from "lru-cache";
import type { Clock } from "../clock/clock.js";
import type { CacheLimits } from "../config/env.js";
import type { Redactor } from "../hygiene/redact.js";
import type { Credential } from "../vault/credential.js";

/** A connection's decrypted credential and its redactor, valid for one exact ciphertext and binding (`version`). */
export interface OpenedCredential {
  readonly version: string;
  readonly credential: Credential;
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

  set(connectionId: string, entry: OpenedCredential): void {
    this.lru.set(connectionId, entry);
  }

  delete(connectionId: string): void {
    this.lru.delete(connectionId);
  }

  /** Drops every entry past its TTL (run by the broker's idle reaper). */
  sweepExpired(): void {
    this.lru.purgeStale();
  }
}
