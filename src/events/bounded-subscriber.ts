import type { BrokerEvent } from "./broker-event.js";
import type { CallEventBus, Subscription } from "./event-bus.js";

// A subscriber that does I/O at its own pace: the bus pushes into a bounded backlog and returns at
// once; the consumer takes items when it can. A consumer that falls `max` items behind is dropped
// (its backlog freed, `onDrop` told), never waited for: calls do not slow down for a slow reader.

/** How one bounded subscriber filters, shapes and reports. */
export interface BoundedSubscriberOptions<T> {
  /** Most items held for the consumer; one more and the subscriber is dropped. */
  readonly max: number;
  /** Which events this subscriber sees (e.g. one team's). */
  readonly filter: (e: BrokerEvent) => boolean;
  /** Shapes an accepted event into what the consumer takes (e.g. one SSE frame). */
  readonly map: (e: BrokerEvent, seq: number) => T;
  /** The backlog went from empty to non-empty: the consumer should start taking. */
  readonly onReady: () => void;
  /** The subscriber was dropped because its backlog overflowed. */
  readonly onDrop: (backlog: number) => void;
}

/** A bounded backlog between the bus and one slow consumer. */
export class BoundedSubscriber<T> {
  private readonly items: T[] = [];
  private head = 0;
  private sub: Subscription | undefined;
  private dropped = false;

  private constructor(private readonly o: BoundedSubscriberOptions<T>) {}

  /** Subscribes to `bus`; undefined when the bus has no room for another subscriber. */
  static attach<T>(bus: CallEventBus, o: BoundedSubscriberOptions<T>): BoundedSubscriber<T> | undefined {
    const s = new BoundedSubscriber(o);
    s.sub = bus.subscribe((e, seq) => s.push(e, seq));
    return s.sub ? s : undefined;
  }

  /** Items waiting for the consumer. */
  get backlog(): number {
    return this.items.length - this.head;
  }

  /** Whether the subscriber was dropped for falling behind. */
  get wasDropped(): boolean {
    return this.dropped;
  }

  /** The oldest waiting item, or undefined when the consumer has caught up. */
  take(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head++];
    // Compact now and then, so a long-lived subscriber's array does not keep what it has taken.
    if (this.head === this.items.length) {
      this.items.length = 0;
      this.head = 0;
    } else if (this.head >= 1024) {
      this.items.splice(0, this.head);
      this.head = 0;
    }
    return item;
  }

  /** Stops receiving events and frees the backlog; idempotent. */
  close(): void {
    this.sub?.unsubscribe();
    this.sub = undefined;
    this.items.length = 0;
    this.head = 0;
  }

  private push(e: BrokerEvent, seq: number): void {
    if (this.sub === undefined || !this.o.filter(e)) return;
    if (this.backlog >= this.o.max) {
      const backlog = this.backlog + 1;
      this.dropped = true;
      this.close();
      this.o.onDrop(backlog);
      return;
    }
    const wasEmpty = this.backlog === 0;
    this.items.push(this.o.map(e, seq));
    if (wasEmpty) this.o.onReady();
  }
}
