import { errorMessage } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";
import type { Signal, SignalHandler, SignalTopic } from "./signals.js";

/** Bounds of the delivery queue of one process. */
export interface DispatchLimits {
  /** Deliveries waiting at most; past it the backlog is dropped and one gap (a full re-read) replaces it. */
  readonly maxQueued: number;
  /** Handlers running at once (each reads the database, so a burst must not take every pooled connection). */
  readonly concurrency: number;
}

/** Defaults: 1,000 queued deliveries, 4 at a time. */
export const DISPATCH_DEFAULTS: DispatchLimits = { maxQueued: 1_000, concurrency: 4 };

type AnyHandler = (payload: never) => void | Promise<void>;

/**
 * The receiving half both adapters share: subscribers per topic, gap handlers, and a bounded queue
 * run with bounded concurrency. Handlers never run inside the sender's stack (always queued).
 */
export class SignalDispatch {
  private readonly handlers = new Map<SignalTopic, Set<AnyHandler>>();
  private readonly gapHandlers = new Set<() => void | Promise<void>>();
  private readonly queue: (() => Promise<void>)[] = [];
  private running = 0;
  private gapQueued = false;
  private closed = false;

  constructor(
    private readonly log: Logger,
    private readonly limits: DispatchLimits = DISPATCH_DEFAULTS,
  ) {}

  /** Adds a handler for `topic`; returns its removal. */
  subscribe<T extends SignalTopic>(topic: T, handler: SignalHandler<T>): () => void {
    let set = this.handlers.get(topic);
    if (!set) {
      set = new Set();
      this.handlers.set(topic, set);
    }
    const h = handler as AnyHandler;
    set.add(h);
    return () => void set.delete(h);
  }

  /** Adds a gap handler; returns its removal. */
  onGap(handler: () => void | Promise<void>): () => void {
    this.gapHandlers.add(handler);
    return () => void this.gapHandlers.delete(handler);
  }

  /** Queues `signal` for every subscriber of its topic. */
  deliver(signal: Signal): void {
    if (this.closed) return;
    const set = this.handlers.get(signal.topic);
    if (!set?.size) return;
    if (this.queue.length + set.size > this.limits.maxQueued) {
      // Too far behind to catch up signal by signal: one re-read of everything supersedes the backlog.
      this.log.warn("cluster signal backlog full: dropping it and re-reading the database", {
        queued: this.queue.length,
      });
      this.queue.length = 0;
      this.gapQueued = false;
      this.gap();
      return;
    }
    for (const h of set)
      this.enqueue(`signal ${signal.topic}`, () =>
        (h as (p: typeof signal.payload) => void | Promise<void>)(signal.payload),
      );
  }

  /** Queues one run of every gap handler (coalesced: a gap already waiting covers this one too). */
  gap(): void {
    if (this.closed || this.gapQueued) return;
    this.gapQueued = true;
    this.enqueue("signal gap", async () => {
      this.gapQueued = false;
      for (const h of [...this.gapHandlers]) await this.safely("signal gap", h);
    });
  }

  /** Drops the backlog; nothing runs afterwards. */
  close(): void {
    this.closed = true;
    this.queue.length = 0;
  }

  private enqueue(what: string, run: () => void | Promise<void>): void {
    this.queue.push(() => this.safely(what, run));
    // Never in the sender's stack: a publisher holding a lock or a half-done request must not run consumers.
    queueMicrotask(() => this.pump());
  }

  private pump(): void {
    while (this.running < this.limits.concurrency && this.queue.length && !this.closed) {
      const job = this.queue.shift()!;
      this.running++;
      void job().finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  private async safely(what: string, run: () => void | Promise<void>): Promise<void> {
    try {
      await run();
    } catch (err) {
      this.log.warn("cluster signal handler failed", { what, error: errorMessage(err) });
    }
  }
}
