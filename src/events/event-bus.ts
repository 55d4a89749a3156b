import type { Logger } from "../log/logger.js";
import type { BrokerEvent } from "./broker-event.js";

// The one internal stream of events (a call's, and the lifecycle events of src/events/lifecycle-event.ts). The call path emits synchronously and never waits:
// every subscriber must be cheap and must not throw (one that does is logged and skipped). A
// subscriber that does I/O (an SSE client) keeps its own bounded backlog (bounded-subscriber.ts)
// and is dropped when it falls behind, so a slow reader can never hold up a call.

/** What the call path sees: emit one event; cheap, synchronous, never throws. */
export interface CallEventSink {
  emit(e: BrokerEvent): void;
}

/** A subscriber: gets each event with its sequence number (increasing for the process's life). */
export type CallEventListener = (e: BrokerEvent, seq: number) => void;

/** A live subscription; `unsubscribe` is idempotent. */
export interface Subscription {
  unsubscribe(): void;
}

/** Where events go when nothing is wired (components built without a bus). */
export const noCallEvents: CallEventSink = Object.freeze({ emit: () => {} });

/** The default cap on subscribers of one bus: internal consumers plus every SSE client. */
export const DEFAULT_MAX_SUBSCRIBERS = 256;

/** The event bus: synchronous fan-out to a bounded set of subscribers. */
export class CallEventBus implements CallEventSink {
  private seq = 0;
  private readonly listeners = new Set<CallEventListener>();
  private readonly remote = new WeakSet<BrokerEvent>();

  constructor(private readonly o: { readonly log: Logger; readonly maxSubscribers?: number }) {}

  /** Subscribers right now. */
  get subscriberCount(): number {
    return this.listeners.size;
  }

  /** Adds a subscriber; undefined when the bus already has its maximum (the caller refuses its client). */
  subscribe(listener: CallEventListener): Subscription | undefined {
    if (this.listeners.size >= (this.o.maxSubscribers ?? DEFAULT_MAX_SUBSCRIBERS)) return undefined;
    // A fresh wrapper per subscription, so the same function subscribed twice is two subscriptions.
    const own: CallEventListener = (e, seq) => listener(e, seq);
    this.listeners.add(own);
    return { unsubscribe: () => void this.listeners.delete(own) };
  }

  /**
   * Emits an event another replica relayed (src/events/relay.ts): streams get it; this replica's
   * metrics and log line skip it (`isRemote`), since the replica where it happened counted it.
   */
  emitRemote(e: BrokerEvent): void {
    this.remote.add(e);
    this.emit(e);
  }

  /** Whether `e` was relayed from another replica. */
  isRemote(e: BrokerEvent): boolean {
    return this.remote.has(e);
  }

  emit(e: BrokerEvent): void {
    const seq = ++this.seq;
    for (const l of this.listeners) {
      try {
        l(e, seq);
      } catch (err) {
        // A subscriber's bug must not fail the call that emitted: logged with the event kind only.
        this.o.log.error("call event subscriber failed", {
          type: e.type,
          error: err instanceof Error ? err.name : "unknown",
        });
      }
    }
  }
}
