import { randomFillSync } from "node:crypto";

// Random identifiers from the CSPRNG, drawn from a batch: one randomFillSync per 256 ids rather than
// one per id (what crypto.randomUUID does too). Each byte is handed out once.

const ID_BYTES = 12;
const BATCH = 256;
const pool = Buffer.alloc(ID_BYTES * BATCH);
let next = pool.length;

/** 12 fresh random bytes as base64url (16 characters, 96 bits). */
export function randomId(): string {
  if (next === pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  const out = pool.toString("base64url", next, next + ID_BYTES);
  next += ID_BYTES;
  return out;
}

/** A new opaque identifier with a readable prefix, e.g. `conn_3f…`. */
export function newId(prefix: "conn" | "grant" | "appr" | "login" | "card" | "res" | "inst"): string {
  return `${prefix}_${randomId()}`;
}

/**
 * A call's id: its start time (milliseconds since the epoch, 12 lowercase hex digits) before the 96
 * random bits, so ids sort by when their calls started. Every call writes two audit rows keyed by
 * it; an index on ids that arrive in order takes each one at its right edge (a page already in the
 * cache, one WAL frame), where random ids land on a random leaf of an index that grows with the
 * table. The random part alone keeps ids unguessable; the time in front says only what the audit
 * row's `at` says.
 */
export function newCallId(now: number = Date.now()): string {
  return `call_${Math.max(0, Math.floor(now)).toString(16).padStart(12, "0")}${randomId()}`;
}
