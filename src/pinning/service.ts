import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Clock } from "../clock/clock.js";
import type { Logger } from "../log/logger.js";
import type { ToolPin } from "../store/records.js";
import type { Store } from "../store/store.js";
import { definitionHash, definitionText, type ToolDefinition } from "./definition.js";
import { PinRefusedError } from "./errors.js";
import { decide, gate, observe, runVerdict, type DecisionResult, type PinDecision, type PinGate, type PlannedPin, type VendorObservation } from "./policy.js";

// The pin service: records what each vendor served when it started (in the store, per team and
// service, and in memory per vendor client), answers the call path's two checks, and applies an
// admin's decisions. The rules themselves are pure, in policy.ts.

/** Most undecided pins one admin listing returns. */
export const MAX_LISTED_CHANGES = 500;

/** A service in a team: what pins are keyed by. */
export interface PinScope {
  readonly teamId: string;
  readonly service: string;
}

/** Pins tool definitions and checks calls against them. */
export class PinService {
  // Per vendor client, so the check reads what the very vendor about to run the tool served; a
  // client that was never observed (or is gone) has no entry, and a WeakMap lets it be collected.
  private readonly served = new WeakMap<Client, VendorObservation>();

  constructor(private readonly d: { readonly store: Pick<Store, "toolPins">; readonly clock: Clock; readonly log: Logger }) {}

  /**
   * Records a started vendor's tool list (undefined: it could not be read). Never throws: a list
   * that cannot be read or stored leaves the vendor unverified, and its calls are refused.
   */
  async observeVendor(client: Client, scope: PinScope, definitions: readonly ToolDefinition[] | undefined): Promise<void> {
    if (definitions === undefined) {
      this.served.set(client, { kind: "unread" });
      return;
    }
    try {
      const observed = definitions.map((def) => ({ tool: def.name, hash: definitionHash(def), definition: definitionText(def) }));
      const changes = await this.d.store.toolPins.update(scope.teamId, scope.service, (current) => observe(current, observed, { ...scope, at: this.d.clock.now() }));
      for (const c of changes) {
        if (c.change === "quarantined") this.d.log.warn("tool definition changed; quarantined until an admin decides", { ...scope, tool: c.tool });
        else if (c.change === "new") this.d.log.info("new vendor tool; unpinned until an admin accepts it", { ...scope, tool: c.tool });
      }
      this.served.set(client, { kind: "read", hashes: new Map(observed.map((o) => [o.tool, o.hash])) });
    } catch (err) {
      this.d.log.error("tool pins could not be recorded; the vendor's calls are refused", { ...scope, error: err instanceof Error ? err.name : "unknown" });
      this.served.set(client, { kind: "unread" });
    }
  }

  /** The policy-stage check (before any approval): refuse a quarantined tool, or say which class rule applies. */
  async gate(scope: PinScope, tool: string): Promise<PinGate> {
    return gate(await this.d.store.toolPins.get(scope.teamId, scope.service, tool));
  }

  /** The run-stage check on the leased vendor, just before its tool runs; throws PinRefusedError to refuse. */
  async verify(client: Client, scope: PinScope, call: { tool: string; planned: PlannedPin; ownConnection: boolean }): Promise<void> {
    const pin = await this.d.store.toolPins.get(scope.teamId, scope.service, call.tool);
    const v = runVerdict({ ...call, observation: this.served.get(client) ?? { kind: "unread" }, pin });
    if (v.kind === "refuse") throw new PinRefusedError(v.code, `${scope.service}/${call.tool}: ${v.code}`);
  }

  /** The service's pins in the team, by tool (for mcp_describe). */
  async pins(scope: PinScope): Promise<Map<string, ToolPin>> {
    return new Map((await this.d.store.toolPins.list(scope.teamId, scope.service)).map((p) => [p.tool, p]));
  }

  /** Pins waiting for an admin (and rejected ones), newest first, bounded. */
  async changes(filter: { teamId?: string; service?: string; tool?: string; limit?: number } = {}): Promise<ToolPin[]> {
    const { limit, ...rest } = filter;
    return this.d.store.toolPins.undecided({ ...rest, limit: Math.min(limit ?? MAX_LISTED_CHANGES, MAX_LISTED_CHANGES) });
  }

  /** Applies an admin's accept or reject (audited, also when refused). Admin rights are the caller's check. */
  async decide(scope: PinScope, d: Omit<PinDecision, "at">): Promise<DecisionResult> {
    return this.d.store.toolPins.update(scope.teamId, scope.service, (current) => decide(current, { ...d, at: this.d.clock.now() }, scope.teamId, scope.service));
  }
}
