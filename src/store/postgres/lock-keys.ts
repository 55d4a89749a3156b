import { createHmac } from "node:crypto";
import type { KeyRing } from "../../vault/keyring.js";
import type { Sql } from "./pg-db.js";

// Advisory locks are per database and any role that may CONNECT can take any key: a key computed
// from a readable name ("job:ttl reaper") lets another role stall a job or hang start-up. Each key
// is an HMAC of the name under a subkey of the deployment's master key, so only replicas holding
// the key ring can name our locks.
//
// Key rotation: a rolling `keys rotate` runs replicas whose rings differ ([K1] beside [K2, K1], then
// [K2, K1] beside [K2]). A lock is taken under the key of EVERY master key in the ring, in ascending
// key order (two replicas taking several keys always queue in the same order: no deadlock). Any two
// replicas whose rings share a key then exclude each other, which every step of the documented
// rotation guarantees.

/** The SQL of one advisory lock key: a bigint parameter (the HMAC, computed here, never in SQL). */
export const KEY_PARAM = "$1::bigint";

/** Most master keys a lock is taken under (a ring longer than this uses its first ones). */
const MAX_RING_KEYS = 4;

/** The secret a development or test store uses when no key ring is given: guessable, never for production. */
const UNKEYED = Buffer.from("slaude-connect/pg-lock-keys/unkeyed/v1");

/** Maps a lock name to its advisory lock keys (decimal bigint strings, ascending, one per master key). */
export class LockKeys {
  private constructor(
    private readonly secrets: readonly Buffer[],
    /** Whether the keys come from a key ring (false: the guessable development default). */
    readonly keyed: boolean,
  ) {}

  /** Keys under every master key of `ring` (primary first, at most MAX_RING_KEYS), subkey purpose `pg-lock-keys`. */
  static fromRing(ring: KeyRing): LockKeys {
    return new LockKeys(
      ring
        .ids()
        .slice(0, MAX_RING_KEYS)
        .map((id) => ring.subkey("pg-lock-keys", id)),
      true,
    );
  }

  /** The development default (tests, a store opened without a key ring): anyone can compute these keys. */
  static unkeyed(): LockKeys {
    return new LockKeys([UNKEYED], false);
  }

  /** The advisory lock keys of `name`, ascending and distinct. */
  keys(name: string): string[] {
    const out = new Set<bigint>();
    for (const s of this.secrets) {
      const mac = createHmac("sha256", s).update("slaude-connect/advisory-lock/v1\0").update(name).digest();
      out.add(mac.readBigInt64BE(0));
    }
    return [...out].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map(String);
  }
}

/** Takes the transaction-level advisory lock `name` (every key, ascending) on `q`, an open transaction. */
export async function xactLock(q: Sql, keys: LockKeys, name: string): Promise<void> {
  for (const k of keys.keys(name)) await q.query(`SELECT pg_advisory_xact_lock(${KEY_PARAM})`, [k]);
}
