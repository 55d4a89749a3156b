import type { Clock } from "../clock/clock.js";
import type { SealedSecret } from "./aead.js";
import { bindingOf, type BoundRow } from "./binding.js";
import type { Vault } from "./vault.js";

/** The audit row a key rotation writes (the store's audit event, as far as rotation fills it). */
export interface KeysRotatedEvent {
  readonly at: number;
  readonly event: "keys_rotated";
  readonly decision: string;
  readonly actor: string;
}

/**
 * Where the sealed rows live: re-seals every row holding a ciphertext in one transaction with the
 * audit row, or changes nothing. The store implements it; the vault never imports the store.
 */
export interface SealedRows {
  reencryptAll(reseal: (row: BoundRow & { sealed: SealedSecret }) => SealedSecret, audit: KeysRotatedEvent): Promise<number>;
}

/**
 * Re-encrypts every stored credential under the vault's primary key in one transaction. If any
 * row cannot be opened (unknown key, tampering) nothing changes and the error propagates.
 */
export async function rotateKeys(deps: { rows: SealedRows; vault: Vault; clock: Clock }, actor: string): Promise<number> {
  return deps.rows.reencryptAll((c) => deps.vault.reseal(c.sealed, bindingOf(c)), {
    at: deps.clock.now(),
    event: "keys_rotated",
    decision: deps.vault.primaryKeyId,
    actor,
  });
}
