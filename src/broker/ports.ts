import type { ThreadRef } from "../domain/thread.js";
import type { Credential } from "../vault/credential.js";

// The ports the broker core is handed by the composition root (src/app/), beside the store, vault,
// pool and approval service: each has a production adapter there and an in-memory fake in tests.

/** The consent port: shows a user the card that starts connecting a service (privately). */
export interface ConsentNotifier {
  sendConsent(thread: ThreadRef, userId: string, service: string): Promise<void>;
}

/**
 * Keeps OAuth credentials fresh (src/login/oauth in production). `fresh` stores refreshed tokens
 * before returning them and is shared by concurrent callers; the broker asks only for a credential
 * expiring within `skewMs`, and uses the credential it returns as is.
 */
export interface CredentialRefresher {
  readonly skewMs: number;
  fresh(connection: { readonly id: string }): Promise<Credential>;
}

/** The crash ledger's sweep: kills vendor processes a previous run of the broker left behind. */
export interface LeftoverSweeper {
  sweep(): number;
}
