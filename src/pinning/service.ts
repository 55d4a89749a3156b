import type { Client } from "@modelcontextprotocol/client";
import type { Clock } from "../clock/clock.js";
import type { RowProof } from "../domain/row-proof.js";
import type { Logger } from "../log/logger.js";
import type { ToolPin } from "../store/records.js";
import type { Store } from "../store/store.js";
import { definitionHash, definitionText, type ToolDefinition } from "./definition.js";
import { PinRefusedError } from "./errors.js";
import {
  type DecisionResult,
  decide,
  gate,
  type NewToolTrust,
  observe,
  type PinDecision,
  type PinGate,
  type PlannedPin,
  runVerdict,
  staleReading,
} from "./policy.js";
import { VendorReadings, type VendorWatch } from "./readings.js";

// The pin service: records what each vendor serves (in the store, per team and service, and in
// memory per vendor client, kept current by readings.ts), answers the call path's two checks, and
// applies an admin's decisions. The rules themselves are pure, in policy.ts.

export type { VendorWatch } from "./readings.js";

/** Most undecided pins one admin listing returns. */
export const MAX_LISTED_CHANGES = 500;

/** A service in a team: what pins are keyed by. */
export interface PinScope {
  readonly teamId: string;
  readonly service: string;
}

/** Settings of the pin service. */
export interface PinServiceOptions {
  /** Least time between two re-reads of one vendor prompted by its `list_changed` notifications. */
  readonly minRelistGapMs?: number;
}

/** A pin read ahead of the run-stage check (`PinService.read`). */
export interface PinRead {
  readonly pin: Promise<ToolPin | undefined>;
  /** The pin's proof from the same read, where the store gives one (PostgreSQL: row-proof.ts). */
  readonly proof?: Promise<RowProof>;
  /** How many pin writes this service had started when it was read. */
  readonly after: number;
  /** When it was read (performance.now()). */
  readonly at: number;
}

/**
 * How old a pin read ahead may be when the run-stage check uses it. A warm call checks within a
 * millisecond or two; a call that waited since (for a pool slot, a credential refresh) reads the pin
 * again, so an admin's decision on another replica meanwhile is seen as before.
 */
export const PIN_READ_AHEAD_MAX_MS = 50;

/** Pins tool definitions and checks calls against them. */
export class PinService {
  /** This service's pin writes: started in all, and still running. */
  private readonly writes = { started: 0, running: 0 };
  /** Each live vendor's latest reading of its tool list, and the re-reads that keep it current. */
  private readonly readings: VendorReadings;

  constructor(
    private readonly d: { readonly store: Pick<Store, "toolPins">; readonly clock: Clock; readonly log: Logger },
    opts: PinServiceOptions = {},
  ) {
    this.readings = new VendorReadings({
      clock: d.clock,
      log: d.log,
      record: (scope, defs) => this.record(scope, defs),
      minGapMs: opts.minRelistGapMs ?? 1_000,
    });
  }

  /**
   * Reads a started vendor's tool list and records it, then keeps it current: the vendor's
   * `notifications/tools/list_changed` and `relistAll` read it again. Rejects only with what
   * `watch.read` rejects with (a vendor over the limits, which the pool then stops); any other
   * failure leaves the vendor unverified, and its calls are refused.
   */
  watchVendor(client: Client, watch: VendorWatch): Promise<void> {
    return this.readings.watch(client, watch);
  }

  /** Reads every given vendor's tool list again, one at a time (the periodic re-list). */
  relistAll(clients: readonly Client[]): Promise<void> {
    return this.readings.relistAll(clients);
  }

  /** Records one reading in the store; the hashes served, or undefined when the pins could not be written. */
  private async record(
    scope: PinScope,
    definitions: readonly ToolDefinition[],
  ): Promise<ReadonlyMap<string, string> | undefined> {
    try {
      const observed = definitions.map((def) => ({
        tool: def.name,
        hash: definitionHash(def),
        definition: definitionText(def),
      }));
      const changes = await this.writing(() =>
        this.d.store.toolPins.update(scope.teamId, scope.service, (current) =>
          observe(current, observed, { ...scope, at: this.d.clock.now() }),
        ),
      );
      for (const c of changes) {
        if (c.change === "quarantined")
          this.d.log.warn("tool definition changed; quarantined until an admin decides", { ...scope, tool: c.tool });
        else if (c.change === "new")
          this.d.log.info("new vendor tool; unreviewed until an admin accepts it", { ...scope, tool: c.tool });
      }
      return new Map(observed.map((o) => [o.tool, o.hash]));
    } catch (err) {
      this.d.log.error("tool pins could not be recorded; the vendor's calls are refused", {
        ...scope,
        error: err instanceof Error ? err.name : "unknown",
      });
      return undefined;
    }
  }

  /** The policy-stage check (before any approval): refuse a quarantined or unreviewed tool, or say which class rule applies. */
  async gate(scope: PinScope, tool: string, trust?: NewToolTrust): Promise<PinGate> {
    return gate(await this.d.store.toolPins.get(scope.teamId, scope.service, tool), trust);
  }

  /**
   * The pin of `tool` as it stands now, read ahead for `verify` (the call path sends it while its
   * write-ahead row commits, so the two round trips overlap). `verify` uses it only if this service
   * wrote no pin since (a vendor started for the call records its tools before it runs one) and it
   * is at most PIN_READ_AHEAD_MAX_MS old, and throws a failed read; one nobody awaits (the call ended
   * first) is dropped. Undefined while a pin write is under way.
   */
  read(scope: PinScope, tool: string): PinRead | undefined {
    if (this.writes.running > 0) return undefined;
    const pins = this.d.store.toolPins;
    if (pins.getProved) {
      const both = pins.getProved(scope.teamId, scope.service, tool);
      const pin = both.then((b) => b.pin);
      const proof = both.then((b) => b.proof);
      pin.catch(() => {});
      proof.catch(() => {});
      return { pin, proof, after: this.writes.started, at: performance.now() };
    }
    const pin = pins.get(scope.teamId, scope.service, tool);
    pin.catch(() => {});
    return { pin, after: this.writes.started, at: performance.now() };
  }

  /**
   * The policy-stage gate from a read made by `read`: that one read then serves the run-stage
   * check too, as long as `fresh` says so when the run starts (a call that waited reads again).
   */
  async gateOf(r: PinRead, trust?: NewToolTrust): Promise<PinGate> {
    return gate(await r.pin, trust);
  }

  /** How many pin writes this service has started (what a PinRead's `after` is compared with). */
  get writesStarted(): number {
    return this.writes.started;
  }

  /** Whether a pin read ahead may still be used: no pin written here since, and read just now. */
  fresh(r: PinRead): boolean {
    return r.after === this.writes.started && performance.now() - r.at <= PIN_READ_AHEAD_MAX_MS;
  }

  /** Counts this service's pin writes, so a pin read ahead of one is not used after it. */
  private async writing<T>(write: () => Promise<T>): Promise<T> {
    this.writes.started++;
    this.writes.running++;
    try {
      return await write();
    } finally {
      this.writes.running--;
    }
  }

  /**
   * The run-stage check on the leased vendor, just before its tool runs, against the pin as it
   * stands now and the vendor's latest reading: one still being re-read (a `list_changed`) is
   * waited for, and one out of date with the pin is read again once before deciding (the pin too,
   * even when `pinRead` read it ahead). Throws PinRefusedError to refuse.
   */
  async verify(
    client: Client,
    scope: PinScope,
    call: { tool: string; planned: PlannedPin; ownConnection: boolean; trustNewTools: boolean },
    pinRead?: PinRead,
  ): Promise<void> {
    await this.readings.current(client);
    let ahead = pinRead && this.fresh(pinRead) ? pinRead.pin : undefined;
    const verdict = async () => {
      const pin = await (ahead ?? this.d.store.toolPins.get(scope.teamId, scope.service, call.tool));
      ahead = undefined;
      const observation = this.readings.observation(client);
      return { pin, observation, v: runVerdict({ ...call, observation, pin }) };
    };
    let r = await verdict();
    if (
      r.v.kind === "refuse" &&
      staleReading({ observation: r.observation, pin: r.pin, tool: call.tool }) &&
      (await this.readings.reread(client))
    )
      r = await verdict();
    if (r.v.kind === "refuse") throw new PinRefusedError(r.v.code, `${scope.service}/${call.tool}: ${r.v.code}`);
  }

  /** The service's pins in the team, by tool (for mcp_describe). */
  async pins(scope: PinScope): Promise<Map<string, ToolPin>> {
    return new Map((await this.d.store.toolPins.list(scope.teamId, scope.service)).map((p) => [p.tool, p]));
  }

  /** Pins waiting for an admin (and rejected ones), newest first, bounded. */
  async changes(filter: { teamId?: string; service?: string; tool?: string; limit?: number } = {}): Promise<ToolPin[]> {
    const { limit, ...rest } = filter;
    return this.d.store.toolPins.undecided({
      ...rest,
      limit: Math.min(limit ?? MAX_LISTED_CHANGES, MAX_LISTED_CHANGES),
    });
  }

  /** Applies an admin's accept or reject (audited, also when refused). Admin rights are the caller's check. */
  async decide(scope: PinScope, d: Omit<PinDecision, "at">): Promise<DecisionResult> {
    return this.writing(() =>
      this.d.store.toolPins.update(scope.teamId, scope.service, (current) =>
        decide(current, { ...d, at: this.d.clock.now() }, scope.teamId, scope.service),
      ),
    );
  }
}
