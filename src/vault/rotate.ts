import type { Clock } from "../clock/clock.js";
import type { SealedSecret } from "./aead.js";
import { type BoundRow, bindingOf } from "./binding.js";
import type { InstallationBinding } from "./installation-binding.js";
import type { Vault } from "./vault.js";

/** The audit row a key rotation writes (the store's audit event, as far as rotation fills it). */
export interface KeysRotatedEvent {
  readonly at: number;
  readonly event: "keys_rotated";
  readonly decision: string;
  readonly actor: string;
}

/** How rotation re-seals each kind of sealed row: a connection's credential, an installation's Slack tokens. */
export interface Resealers {
  connection(row: BoundRow & { sealed: SealedSecret }): SealedSecret;
  installation(row: InstallationBinding & { sealed: SealedSecret }): SealedSecret;
}

/** How many rows a rotation re-sealed, by kind. */
export interface RotatedCounts {
  readonly connections: number;
  readonly installations: number;
}

/**
 * Where the sealed rows live: re-seals every connection and installation holding a ciphertext in
 * one transaction with the audit row, or changes nothing. The store implements it; the vault never imports the store.
 */
export interface SealedRows {
  reencryptAll(reseal: Resealers, audit: KeysRotatedEvent): Promise<RotatedCounts>;
}

/**
 * Re-encrypts every stored credential and installation under the vault's primary key in one
 * transaction. If any row cannot be opened (unknown key, tampering) nothing changes and the error propagates.
 */
export async function rotateKeys(
  deps: { rows: SealedRows; vault: Vault; clock: Clock },
  actor: string,
): Promise<RotatedCounts> {
  return deps.rows.reencryptAll(
    {
      connection: (c) => deps.vault.reseal(c.sealed, bindingOf(c)),
      // The row is its own binding: the AAD reads only the binding's fields.
      installation: (i) => deps.vault.resealInstallation(i.sealed, i),
    },
    { at: deps.clock.now(), event: "keys_rotated", decision: deps.vault.primaryKeyId, actor },
  );
}
