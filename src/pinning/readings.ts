import type { Client } from "@modelcontextprotocol/client";
import type { Clock, Timer } from "../clock/clock.js";
import type { Logger } from "../log/logger.js";
import type { ToolDefinition } from "./definition.js";
import type { VendorObservation } from "./policy.js";
import type { PinScope } from "./service.js";

// What each live vendor serves, kept current. A vendor is read when it starts, again when it sends
// `notifications/tools/list_changed`, on the broker's periodic re-list, and when a call finds its
// reading out of date with the pin. Every read goes through the caller's bounded reader
// (src/pool/tool-paging.ts); one vendor is never read twice at once, the vendors of one service
// in a team are read one at a time, and notifications re-read a vendor at most once per gap, so a
// vendor that floods notifications costs one bounded read per gap.

/** How one vendor is read and stopped; built by the broker from the lease that started it. */
export interface VendorWatch {
  readonly scope: PinScope;
  /**
   * Reads the vendor's whole tool list within the broker's limits, redacted; undefined when it could
   * not be read. Rejects for a vendor over the limits.
   */
  readonly read: () => Promise<readonly ToolDefinition[] | undefined>;
  /** Stops the vendor: its re-read went over the limits. */
  readonly stop: () => Promise<void>;
}

/** Records a reading in the pins; the hashes served, or undefined when they could not be recorded. */
export type RecordReading = (
  scope: PinScope,
  definitions: readonly ToolDefinition[],
) => Promise<ReadonlyMap<string, string> | undefined>;

interface Reading {
  readonly watch: VendorWatch;
  observation: VendorObservation;
  /** The read in progress (never rejects). */
  inFlight: Promise<void> | undefined;
  /** A `list_changed` arrived since the last read began. */
  stale: boolean;
  /** A notification's read, waiting for the gap since the last one. */
  timer: Timer | undefined;
  lastReadAt: number;
}

/** The latest reading of each watched vendor client, and the re-reads that keep it current. */
export class VendorReadings {
  // Per client: the reading dies with the vendor's client.
  private readonly readings = new WeakMap<Client, Reading>();
  /** The tail of each service's reads (one at a time per team and service). */
  private readonly lanes = new Map<string, Promise<void>>();

  constructor(
    private readonly d: {
      readonly clock: Clock;
      readonly log: Logger;
      readonly record: RecordReading;
      readonly minGapMs: number;
    },
  ) {}

  /** Watches `client`'s list_changed notifications and reads it once; rejects only as `watch.read` does. */
  async watch(client: Client, watch: VendorWatch): Promise<void> {
    const r: Reading = {
      watch,
      observation: { kind: "unread" },
      inFlight: undefined,
      stale: false,
      timer: undefined,
      lastReadAt: Number.NEGATIVE_INFINITY,
    };
    this.readings.set(client, r);
    client.setNotificationHandler("notifications/tools/list_changed", () => this.listChanged(r));
    await this.read(r, true);
  }

  /** The client's latest reading; unread for a client never watched. */
  observation(client: Client): VendorObservation {
    return this.readings.get(client)?.observation ?? { kind: "unread" };
  }

  /** Settles once the reading is current: a read in flight is waited for, one a notification asked for is done now. */
  async current(client: Client): Promise<void> {
    const r = this.readings.get(client);
    // Two rounds at most: a vendor that notifies during every read does not hold a call forever.
    for (let round = 0; r && round < 2 && (r.inFlight || r.stale); round++) await (r.inFlight ?? this.read(r, false));
  }

  /** Reads the client again now (or waits for the read in flight); false for a client never watched. */
  async reread(client: Client): Promise<boolean> {
    const r = this.readings.get(client);
    if (!r) return false;
    await (r.inFlight ?? this.read(r, false));
    return true;
  }

  /** Reads each watched client again, one after another (the periodic re-list). */
  async relistAll(clients: readonly Client[]): Promise<void> {
    for (const c of clients) {
      const r = this.readings.get(c);
      if (r) await (r.inFlight ?? this.read(r, false));
    }
  }

  /** A notification: read again now, or once the gap since the last read has passed. */
  private listChanged(r: Reading): void {
    r.stale = true;
    if (r.inFlight || r.timer) return;
    const wait = r.lastReadAt + this.d.minGapMs - this.d.clock.now();
    if (wait <= 0) {
      void this.read(r, false);
      return;
    }
    r.timer = this.d.clock.setTimeout(
      () => {
        r.timer = undefined;
        if (!r.inFlight) void this.read(r, false);
      },
      wait,
      { unref: true },
    );
  }

  /** One read and its record; the returned promise rejects only for the start read (`rethrow`). */
  private read(r: Reading, rethrow: boolean): Promise<void> {
    r.timer?.cancel();
    r.timer = undefined;
    r.stale = false;
    const { scope } = r.watch;
    const run = this.inLane(`${scope.teamId}\u0000${scope.service}`, async () => {
      let definitions: readonly ToolDefinition[] | undefined;
      try {
        definitions = await r.watch.read();
      } catch (err) {
        r.observation = { kind: "unread" };
        if (rethrow) throw err;
        // Over the limits on a re-read: stopped, as it would have been at its start.
        this.d.log.warn("vendor tool list went over the limits on a re-read; stopping the vendor", {
          ...scope,
          error: err instanceof Error ? err.name : "unknown",
        });
        await r.watch.stop().catch(() => {});
        return;
      }
      const hashes = definitions === undefined ? undefined : await this.d.record(scope, definitions);
      r.observation = hashes ? { kind: "read", hashes } : { kind: "unread" };
    });
    const done = run
      .then(
        () => {},
        () => {},
      )
      .finally(() => {
        r.inFlight = undefined;
        r.lastReadAt = this.d.clock.now();
        // A notification during the read may describe a list newer than the one read.
        if (r.stale) this.listChanged(r);
      });
    r.inFlight = done;
    return rethrow ? run : done;
  }

  /** Runs `fn` after every read of the same service already queued. */
  private inLane(key: string, fn: () => Promise<void>): Promise<void> {
    const run = (this.lanes.get(key) ?? Promise.resolve()).then(fn);
    const tail = run.then(
      () => {},
      () => {},
    );
    this.lanes.set(key, tail);
    void tail.then(() => {
      if (this.lanes.get(key) === tail) this.lanes.delete(key);
    });
    return run;
  }
}
