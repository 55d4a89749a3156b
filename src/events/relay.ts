import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import type { Clock, Timer } from "../clock/clock.js";
import { errorMessage } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";
import { type BrokerEvent, CALL_EVENT_TYPES } from "./broker-event.js";
import type { CallEventBus, Subscription } from "./event-bus.js";
import { VENDOR_LIFECYCLE_TYPES } from "./lifecycle-event.js";

// Replicas on one PostgreSQL hand each other the events that exist only where they happen (a
// call's, a vendor child's): every replica's GET /v1/events then carries its team's events wherever
// the call or child ran. (Events with an audit row need no relay: every replica reads them from
// the audit table, src/events/audit-tail.ts.) Batches travel by NOTIFY, sealed with AES-256-GCM
// under a key derived from the master key: any role that can LISTEN on the server sees only
// ciphertext, and one that can NOTIFY cannot forge an event. Like the stream itself the relay is
// best effort and bounded: a full queue drops events (logged), never holds up a call.

/** The NOTIFY channel of relayed events. */
export const EVENTS_CHANNEL = "slaude_events";

/** What the relay sends and listens over (PgDb has both). */
export interface RelayTransport {
  notify(channel: string, payload: string): Promise<void>;
  listen(
    channel: string,
    onMessage: (payload: string) => void,
    onLost: (err: Error) => void,
  ): Promise<{ close(): Promise<void> }>;
}

/** Bounds of the relay. */
export interface RelayLimits {
  /** Events waiting to be sent at most; past it new ones are dropped. */
  readonly maxQueued: number;
  /** Plaintext bytes of one batch (sealed and base64 it stays under PostgreSQL's 8,000-byte NOTIFY limit). */
  readonly maxBatchBytes: number;
  /** A batch older (or newer) than this by the receiver's clock is dropped: a replayed NOTIFY repeats nothing. */
  readonly maxSkewMs: number;
  /**
   * How long the first event of a batch waits for others (default RELAY_BATCH_WINDOW_MS): a warm
   * call's started and ended events then travel in one NOTIFY instead of two.
   */
  readonly batchWindowMs?: number;
}

/**
 * The default batch window. Other replicas' live views see a call's events this much later at
 * most (a person watching does not notice 50 ms); warm calls of a few milliseconds each share one
 * NOTIFY, one seal and one unseal per listener several calls at a time (10 ms gave one per call).
 */
export const RELAY_BATCH_WINDOW_MS = 50;

/** Defaults: 2,000 queued events, 5,000-byte batches, 60 s. */
export const RELAY_DEFAULTS: RelayLimits = { maxQueued: 2_000, maxBatchBytes: 5_000, maxSkewMs: 60_000 };

const RELAYED = new Set<string>([...CALL_EVENT_TYPES, ...VENDOR_LIFECYCLE_TYPES]);
const AAD = Buffer.from("slaude-connect/events/v1");
const MAX_WIRE = 7_900;
const SEEN_MAX = 1_024;

interface Batch {
  readonly o: string;
  readonly n: number;
  readonly at: number;
  readonly e: BrokerEvent[];
}

/** Seals `text` with `key`: base64 of iv ‖ tag ‖ ciphertext. */
function seal(key: Buffer, text: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv("aes-256-gcm", key, iv).setAAD(AAD);
  const body = Buffer.concat([c.update(text, "utf8"), c.final()]);
  return Buffer.concat([iv, c.getAuthTag(), body]).toString("base64");
}

/** Opens what `seal` made; undefined for anything else. */
function unseal(key: Buffer, wire: string): string | undefined {
  try {
    const raw = Buffer.from(wire, "base64");
    if (raw.length < 29) return undefined;
    const d = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12)).setAAD(AAD);
    d.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString("utf8");
  } catch {
    return undefined;
  }
}

/** Whether `x` is a batch as this code sends them (it was authenticated; this guards against our own bugs). */
function isBatch(x: unknown): x is Batch {
  const b = x as Partial<Batch> | null;
  return (
    typeof b === "object" &&
    b !== null &&
    typeof b.o === "string" &&
    Number.isSafeInteger(b.n) &&
    typeof b.at === "number" &&
    Array.isArray(b.e) &&
    b.e.every(
      (e) =>
        typeof e === "object" &&
        e !== null &&
        RELAYED.has((e as { type?: unknown }).type as string) &&
        typeof (e as { teamId?: unknown }).teamId === "string",
    )
  );
}

/** Sends this replica's call and vendor events to the others, and emits theirs on this replica's bus. */
export class EventRelay {
  private readonly origin = randomBytes(9).toString("base64url");
  private readonly queue: BrokerEvent[] = [];
  private readonly seen = new Set<string>();
  private sub: Subscription | undefined;
  private listener: { close(): Promise<void> } | undefined;
  private retry: Timer | undefined;
  private retryMs = 100;
  private sending = false;
  private batchSeq = 0;
  private dropped = 0;
  private closed = false;

  constructor(
    private readonly bus: CallEventBus,
    private readonly transport: RelayTransport,
    private readonly key: Buffer,
    private readonly o: {
      readonly log: Logger;
      readonly clock: Clock;
      readonly limits?: RelayLimits;
      readonly channel?: string;
    },
  ) {}

  private get limits(): RelayLimits {
    return this.o.limits ?? RELAY_DEFAULTS;
  }

  /** Events waiting to be sent right now. */
  get queued(): number {
    return this.queue.length;
  }

  /** Subscribes to the bus and LISTENs (retrying in the background when it cannot). */
  async start(): Promise<void> {
    this.sub = this.bus.subscribe((e) => this.enqueue(e));
    if (!this.sub) this.o.log.error("events relay not started: the event bus has no room for another subscriber");
    await this.connect();
  }

  private enqueue(e: BrokerEvent): void {
    if (this.closed || !RELAYED.has(e.type) || this.bus.isRemote(e)) return;
    if (this.queue.length >= this.limits.maxQueued) {
      if (this.dropped++ === 0)
        this.o.log.warn("events relay queue full: dropping events for other replicas", {
          limit: this.limits.maxQueued,
        });
      return;
    }
    this.queue.push(e);
    if (!this.sending) {
      this.sending = true;
      // A real timer, not the clock's: the window batches sends, it measures nothing of the domain.
      setTimeout(() => void this.flush(), this.limits.batchWindowMs ?? RELAY_BATCH_WINDOW_MS).unref();
    }
  }

  private async flush(): Promise<void> {
    try {
      while (this.queue.length && !this.closed) {
        const batch: BrokerEvent[] = [];
        let bytes = 64;
        while (this.queue.length) {
          const size = Buffer.byteLength(JSON.stringify(this.queue[0]));
          if (batch.length && bytes + size + 1 > this.limits.maxBatchBytes) break;
          batch.push(this.queue.shift()!);
          bytes += size + 1;
        }
        const wire = seal(
          this.key,
          JSON.stringify({ o: this.origin, n: ++this.batchSeq, at: this.o.clock.now(), e: batch } satisfies Batch),
        );
        if (wire.length > MAX_WIRE) {
          this.o.log.warn("events relay: an event too large to send was dropped", { type: batch[0]!.type });
          continue;
        }
        await this.transport
          .notify(this.o.channel ?? EVENTS_CHANNEL, wire)
          .catch((err: unknown) =>
            this.o.log.warn("events relay: could not send", { error: errorMessage(err), events: batch.length }),
          );
      }
    } finally {
      this.sending = false;
      if (this.dropped) this.o.log.warn("events relay dropped events", { dropped: this.dropped });
      this.dropped = 0;
    }
  }

  private receive(wire: string): void {
    if (wire.length > MAX_WIRE) return;
    const text = unseal(this.key, wire);
    let batch: unknown;
    try {
      batch = text === undefined ? undefined : JSON.parse(text);
    } catch {
      batch = undefined;
    }
    // Not sealed with our key (a forgery, another deployment), or not our shape: dropped, never acted on.
    if (!isBatch(batch))
      return void this.o.log.warn("events relay: dropped a notification that is not ours", { bytes: wire.length });
    if (batch.o === this.origin || Math.abs(this.o.clock.now() - batch.at) > this.limits.maxSkewMs) return;
    const id = `${batch.o}:${batch.n}`;
    if (this.seen.has(id)) return;
    this.seen.add(id);
    if (this.seen.size > SEEN_MAX) this.seen.delete(this.seen.values().next().value!);
    for (const e of batch.e) this.bus.emitRemote(e);
  }

  private async connect(): Promise<void> {
    this.retry = undefined;
    if (this.closed) return;
    try {
      const l = await this.transport.listen(
        this.o.channel ?? EVENTS_CHANNEL,
        (t) => this.receive(t),
        () => this.lost(),
      );
      if (this.closed) return void (await l.close());
      this.listener = l;
      this.retryMs = 100;
    } catch (err) {
      this.o.log.warn("events relay: cannot LISTEN, retrying", { error: errorMessage(err), retryMs: this.retryMs });
      this.schedule();
    }
  }

  private lost(): void {
    this.listener = undefined;
    if (!this.closed) this.schedule();
  }

  private schedule(): void {
    if (this.closed || this.retry) return;
    const wait = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, 5_000);
    this.retry = this.o.clock.setTimeout(() => void this.connect(), wait, { unref: true });
  }

  /** Stops relaying; idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    this.sub?.unsubscribe();
    this.retry?.cancel();
    this.queue.length = 0;
    const l = this.listener;
    this.listener = undefined;
    await l?.close().catch(() => {});
  }
}
