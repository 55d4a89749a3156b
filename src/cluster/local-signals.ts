import type { Logger } from "../log/logger.js";
import { DISPATCH_DEFAULTS, type DispatchLimits, SignalDispatch } from "./dispatch.js";
import {
  type ClusterSignals,
  decodeSignal,
  encodeSignal,
  type SignalHandler,
  type SignalPayload,
  type SignalTopic,
} from "./signals.js";

/**
 * The single-process adapter (SQLite, or a CLI on SQLite): a signal reaches this process's own
 * subscribers only, through the same encode, validate and queue steps as the PostgreSQL adapter,
 * so the consumers' code path is the same with one replica or many.
 */
export class LocalClusterSignals implements ClusterSignals {
  private readonly dispatch: SignalDispatch;
  private closed = false;

  constructor(
    private readonly log: Logger,
    limits: DispatchLimits = DISPATCH_DEFAULTS,
  ) {
    this.dispatch = new SignalDispatch(log, limits);
  }

  async publish<T extends SignalTopic>(topic: T, payload: SignalPayload<T>): Promise<void> {
    if (this.closed) return;
    const wire = encodeSignal(topic, payload);
    const signal = wire === undefined ? undefined : decodeSignal(wire);
    if (!signal) {
      this.log.warn("cluster signal not sent: its payload does not match its topic", { topic });
      return;
    }
    this.dispatch.deliver(signal);
  }

  subscribe<T extends SignalTopic>(topic: T, handler: SignalHandler<T>): () => void {
    return this.dispatch.subscribe(topic, handler);
  }

  onGap(handler: () => void | Promise<void>): () => void {
    return this.dispatch.onGap(handler);
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.closed = true;
    this.dispatch.close();
  }
}
