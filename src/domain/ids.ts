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
export function newId(prefix: "conn" | "grant" | "appr" | "login" | "call" | "card" | "res" | "inst"): string {
  return `${prefix}_${randomId()}`;
}
