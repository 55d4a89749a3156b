import type { Clock, Timer } from "../../clock/clock.js";
import { DISPATCH_DEFAULTS, type DispatchLimits, SignalDispatch } from "../../cluster/dispatch.js";
import { SignalSeal } from "../../cluster/signal-seal.js";
import {
  type ClusterSignals,
  decodeSignal,
  encodeSignal,
  type SignalHandler,
  type SignalPayload,
  type SignalTopic,
} from "../../cluster/signals.js";
import { errorMessage } from "../../domain/errors.js";
import type { Logger } from "../../log/logger.js";
import type { PgDb } from "../../store/postgres/pg-db.js";
import type { KeyRing } from "../../vault/keyring.js";

/** The NOTIFY channel every replica of one database listens on. */
export const SIGNAL_CHANNEL = "slaude_signals";

/** Options of the PostgreSQL signals adapter. */
export interface PgSignalsOptions {
  readonly log: Logger;
  readonly clock: Clock;
  /** The deployment's key ring: every signal on the wire is sealed under it (cluster/signal-seal.ts). */
  readonly keys: KeyRing;
  /** The NOTIFY channel (default `slaude_signals`). */
  readonly channel?: string;
  /** Reconnect backoff of the LISTEN connection: first wait and cap (ms). */
  readonly retryMs?: { readonly first: number; readonly max: number };
  readonly limits?: DispatchLimits;
}

/**
 * Signals between replicas over PostgreSQL NOTIFY/LISTEN: one LISTEN connection per process,
 * reconnected with backoff when lost; once listening again every gap handler runs, so consumers
 * re-read the database for whatever was missed. Publishing is a NOTIFY on the pool of the signal
 * sealed under the key ring: other roles that may LISTEN read nothing, and what they NOTIFY is dropped.
 */
export class PgClusterSignals implements ClusterSignals {
  private readonly dispatch: SignalDispatch;
  private readonly channel: string;
  private readonly seal: SignalSeal;
  private listener: { close(): Promise<void> } | undefined;
  private retry: Timer | undefined;
  private delayMs: number;
  private closed = false;
  private started = false;

  constructor(
    private readonly db: PgDb,
    private readonly o: PgSignalsOptions,
  ) {
    this.dispatch = new SignalDispatch(o.log, o.limits ?? DISPATCH_DEFAULTS);
    this.channel = o.channel ?? SIGNAL_CHANNEL;
    this.seal = new SignalSeal(o.keys, o.clock);
    this.delayMs = this.o.retryMs?.first ?? 100;
  }

  /** Whether the LISTEN connection is up right now. */
  get listening(): boolean {
    return this.listener !== undefined;
  }

  async publish<T extends SignalTopic>(topic: T, payload: SignalPayload<T>): Promise<void> {
    if (this.closed) return;
    const wire = encodeSignal(topic, payload);
    if (wire === undefined) {
      this.o.log.warn("cluster signal not sent: its payload does not match its topic", { topic });
      return;
    }
    try {
      await this.db.notify(this.channel, this.seal.seal(wire));
    } catch (err) {
      // The change is committed; the others find it by their polls or their next gap re-read.
      this.o.log.warn("cluster signal could not be sent", { topic, error: errorMessage(err) });
    }
  }

  subscribe<T extends SignalTopic>(topic: T, handler: SignalHandler<T>): () => void {
    return this.dispatch.subscribe(topic, handler);
  }

  onGap(handler: () => void | Promise<void>): () => void {
    return this.dispatch.onGap(handler);
  }

  /** LISTENs now; when that fails, retries in the background (start-up does not wait for it). */
  async start(): Promise<void> {
    if (this.started || this.closed) return;
    this.started = true;
    await this.connect(false);
  }

  private async connect(afterLoss: boolean): Promise<void> {
    this.retry = undefined;
    if (this.closed) return;
    try {
      const l = await this.db.listen(
        this.channel,
        (text) => this.receive(text),
        (err) => this.lost(err),
      );
      if (this.closed) return void (await l.close());
      this.listener = l;
      this.delayMs = this.o.retryMs?.first ?? 100;
      if (afterLoss) {
        this.o.log.info("cluster signals: listening again; re-reading what may have been missed");
        this.dispatch.gap();
      }
    } catch (err) {
      this.o.log.warn("cluster signals: cannot LISTEN, retrying", { error: errorMessage(err), retryMs: this.delayMs });
      this.schedule();
    }
  }

  private lost(err: Error): void {
    this.listener = undefined;
    if (this.closed) return;
    this.o.log.warn("cluster signals: LISTEN connection lost, reconnecting", { error: err.message });
    this.schedule();
  }

  private schedule(): void {
    if (this.closed || this.retry) return;
    const wait = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, this.o.retryMs?.max ?? 5_000);
    this.retry = this.o.clock.setTimeout(() => void this.connect(true), wait, { unref: true });
  }

  private receive(text: string): void {
    // Any role that may connect can NOTIFY on this channel: only what opens under our key ring, once and fresh, is acted on.
    const opened = this.seal.open(text);
    if ("dropped" in opened) {
      this.o.log.warn("cluster signal dropped: not sealed by a replica of this deployment", {
        why: opened.dropped,
        bytes: Buffer.byteLength(text),
      });
      return;
    }
    const signal = decodeSignal(opened.wire);
    if (!signal) {
      this.o.log.warn("cluster signal dropped: not a known signal", { bytes: Buffer.byteLength(opened.wire) });
      return;
    }
    this.dispatch.deliver(signal);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.retry?.cancel();
    this.retry = undefined;
    this.dispatch.close();
    const l = this.listener;
    this.listener = undefined;
    await l?.close().catch(() => {});
  }
}
