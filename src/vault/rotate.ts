import type { Clock } from "../clock/clock.js";
import { bindingOf } from "../connections/binding.js";
import type { Store } from "../store/store.js";
import type { Vault } from "./vault.js";

/**
 * Re-encrypts every stored credential under the vault's primary key in one transaction. If any
 * row cannot be opened (unknown key, tampering) nothing changes and the error propagates.
 */
export async function rotateKeys(deps: { store: Store; vault: Vault; clock: Clock }, actor: string): Promise<number> {
  return deps.store.connections.reencryptAll((c) => deps.vault.reseal(c.sealed, bindingOf(c)), {
    at: deps.clock.now(),
    event: "keys_rotated",
    decision: deps.vault.primaryKeyId,
    actor,
  });
}
