import type { AuditEvent } from "../audit/event.js";
import type { SealedSecret } from "../vault/aead.js";

// The result store's part of the storage port (src/store/store.ts): sealed full results of
// truncated tool calls, owned by one user in one thread, with an expiry and a per-team byte cap.

/** A stored result's facts: who owns it, where, and until when; no ciphertext. */
export interface StoredResultMeta {
  readonly id: string;
  readonly teamId: string;
  readonly channelId: string;
  readonly threadTs: string;
  /** The caller whose mcp_call produced it: the only user who may read it. */
  readonly ownerUserId: string;
  readonly callId: string;
  readonly service: string;
  readonly tool: string;
  /** Size of the stored (redacted) text in bytes; what the team cap counts. */
  readonly sizeBytes: number;
  readonly createdAt: number;
  readonly expiresAt: number;
}

/** A stored result with its ciphertext (AAD-bound to id, team, owner and thread). */
export interface StoredResult extends StoredResultMeta {
  readonly sealed: SealedSecret;
}

/** What `put` did: stored (with the team's oldest results it evicted to make room), or refused as larger than the whole cap. */
export type PutResultOutcome =
  | { readonly stored: true; readonly evicted: readonly StoredResultMeta[] }
  | { readonly stored: false };

/** Stored results repository. */
export interface ResultRepo {
  /**
   * Stores `r` in one transaction: the team's expired rows are deleted, then its oldest rows until
   * the team's total plus `r` fits `maxTeamBytes`. A result alone larger than the cap is not stored.
   * `audit` builds the rows recording the outcome (stored, evicted), written in the same transaction.
   */
  put(
    r: StoredResult,
    maxTeamBytes: number,
    audit: (evicted: readonly StoredResultMeta[]) => readonly AuditEvent[],
  ): Promise<PutResultOutcome>;
  /** The row with this id, expired or not (the reader decides); undefined when there is none. */
  get(id: string): Promise<StoredResult | undefined>;
  /** Deletes every row with expires_at <= now (the ciphertext is overwritten on disk); returns how many. */
  deleteExpired(now: number): Promise<number>;
  /** Deletes every row of a team (its installation was uninstalled), with its audit rows; returns how many. */
  deleteTeam(teamId: string, audit: readonly AuditEvent[]): Promise<number>;
  /** Bytes the team's unexpired rows hold at `now`. */
  teamBytes(teamId: string, now: number): Promise<number>;
}
