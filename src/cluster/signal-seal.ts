import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { Clock } from "../clock/clock.js";
import { openWithAad, sealWithAad } from "../vault/aead.js";
import type { KeyRing } from "../vault/keyring.js";

// NOTIFY is readable and writable by every role that may connect to the database: LISTEN shows
// every payload, and anyone can send one. A signal on the wire is therefore sealed: AES-256-GCM
// under the `cluster-signals` subkey of a master key, so a listener learns nothing (no connection
// or MCP session id) and a forged or altered signal fails to open and is dropped. A sealed signal
// carries its time and a random id: one replayed later than MAX_AGE_MS, or a second time, is dropped.
//
// Key rotation: the sender seals the same signal once under each master key of its ring (at most
// MAX_BOXES); a receiver opens the first box under a key it has. Replicas whose rings share one key
// (every step of a rolling `keys rotate`) hear each other.

/** A sealed signal older (or further in the future) than this is dropped: replicas' clocks must agree within it. */
export const MAX_AGE_MS = 60_000;

/** Most boxes (master keys) one sealed signal carries and a receiver tries. */
const MAX_BOXES = 4;

/** Most signal ids remembered for replay detection (a signal's id is kept for MAX_AGE_MS). */
const MAX_SEEN = 20_000;

/** The largest sealed text accepted (PostgreSQL's NOTIFY payload limit is 8000 bytes). */
export const MAX_SEALED_BYTES = 7_900;

const AAD = "slaude-connect/cluster-signal/v1";

const b64 = z
  .string()
  .regex(/^[A-Za-z0-9+/]+={0,2}$/)
  .max(2_000);
const sealedShape = z
  .object({
    v: z.literal(1),
    b: z
      .array(z.object({ k: z.string().regex(/^k_[0-9a-f]{16}$/), n: b64, c: b64, t: b64 }).strict())
      .min(1)
      .max(MAX_BOXES),
  })
  .strict();
const innerShape = z
  .object({ w: z.string(), at: z.number().int().safe(), id: z.string().regex(/^[A-Za-z0-9_-]{22}$/) })
  .strict();

/** Why a received text was dropped (for the log; never the text itself). */
export type UnsealFailure = "malformed" | "unknown_key" | "forged" | "stale" | "replayed";

/** Seals outgoing signals and opens incoming ones, for the replicas that hold one key ring. */
export class SignalSeal {
  // Insertion order is time order: the oldest ids are at the front.
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly ring: KeyRing,
    private readonly clock: Pick<Clock, "now">,
  ) {}

  /** `wire` (an encoded signal) sealed under every key of the ring (at most MAX_BOXES). */
  seal(wire: string): string {
    const inner = Buffer.from(
      JSON.stringify({ w: wire, at: this.clock.now(), id: randomBytes(16).toString("base64url") }),
    );
    const boxes = this.ring
      .ids()
      .slice(0, MAX_BOXES)
      .map((keyId) => {
        const s = sealWithAad(this.ring.subkey("cluster-signals", keyId), keyId, inner, aad(keyId));
        return {
          k: keyId,
          n: s.nonce.toString("base64"),
          c: s.ciphertext.toString("base64"),
          t: s.tag.toString("base64"),
        };
      });
    inner.fill(0);
    return JSON.stringify({ v: 1, b: boxes });
  }

  /** The signal inside `text`, or why it was dropped. Each id is accepted once, within MAX_AGE_MS of its time. */
  open(text: string): { wire: string } | { dropped: UnsealFailure } {
    if (Buffer.byteLength(text) > MAX_SEALED_BYTES) return { dropped: "malformed" };
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return { dropped: "malformed" };
    }
    const sealed = sealedShape.safeParse(raw);
    if (!sealed.success) return { dropped: "malformed" };
    const box = sealed.data.b.find((x) => this.ring.has(x.k));
    if (!box) return { dropped: "unknown_key" };
    let plain: Buffer;
    try {
      plain = openWithAad(
        this.ring.subkey("cluster-signals", box.k),
        {
          keyId: box.k,
          nonce: Buffer.from(box.n, "base64"),
          ciphertext: Buffer.from(box.c, "base64"),
          tag: Buffer.from(box.t, "base64"),
        },
        aad(box.k),
      );
    } catch {
      return { dropped: "forged" };
    }
    let inner: z.infer<typeof innerShape>;
    try {
      const parsed = innerShape.safeParse(JSON.parse(plain.toString("utf8")));
      if (!parsed.success) return { dropped: "forged" };
      inner = parsed.data;
    } catch {
      return { dropped: "forged" };
    }
    const now = this.clock.now();
    if (Math.abs(now - inner.at) > MAX_AGE_MS) return { dropped: "stale" };
    this.forgetBefore(now - MAX_AGE_MS);
    if (this.seen.has(inner.id)) return { dropped: "replayed" };
    this.seen.set(inner.id, inner.at);
    // Only our own replicas can add ids; past the cap the oldest go first (they are near expiry anyway).
    while (this.seen.size > MAX_SEEN) this.seen.delete(this.seen.keys().next().value!);
    return { wire: inner.w };
  }

  private forgetBefore(limit: number): void {
    for (const [id, at] of this.seen) {
      if (at >= limit) break;
      this.seen.delete(id);
    }
  }
}

function aad(keyId: string): Buffer {
  return Buffer.from(JSON.stringify([AAD, keyId]));
}
