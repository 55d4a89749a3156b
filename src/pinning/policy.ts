import type { AuditEvent } from "../audit/event.js";
import type { ToolPin } from "../store/records.js";
import type { PinWrite } from "../store/store.js";

// The pin rules, pure: what a vendor's tool list does to a service's pins, what an admin's accept or
// reject does, and whether a call may go ahead. Orchestration (store, vendors, audit) is in
// service.ts; this file decides, and is table-tested in test/pinning/policy.test.ts.

/** One tool as a vendor served it (at start, or at a later reading): its definition hash and its (bounded) text. */
export interface ObservedTool {
  readonly tool: string;
  readonly hash: string;
  readonly definition: string;
}

/** Where the observation came from: the team and service, and when. */
export interface ObservationContext {
  readonly teamId: string;
  readonly service: string;
  readonly at: number;
}

/** What one observation changed, tool by tool (for logs and tests; audit rows say the same). */
export interface PinChange {
  readonly tool: string | null;
  readonly change: "first_seen" | "new" | "quarantined" | "restored";
}

const base = (c: ObservationContext, tool: string) => ({ teamId: c.teamId, service: c.service, tool });

/**
 * Applies a vendor's tool list to the service's pins. The first list a team sees pins every tool
 * (trust on first use); later, a tool served with another definition than its pin is quarantined, a
 * tool never seen before is new (unpinned). A quarantine is sticky: only an admin ends it, so a
 * vendor that flips between definitions cannot clear it. A rejected tool served with its pinned
 * definition again is restored.
 */
export function observe(
  current: readonly ToolPin[],
  observed: readonly ObservedTool[],
  c: ObservationContext,
): PinWrite<PinChange[]> {
  const audit = (tool: string | null, decision: string, hash: string | null): AuditEvent => ({
    at: c.at,
    event: "tool_pin",
    teamId: c.teamId,
    service: c.service,
    tool,
    decision,
    argsHash: hash,
    actor: "vendor",
  });
  if (current.length === 0) {
    if (observed.length === 0) return { writes: [], audit: [], value: [] };
    const writes = observed.map(
      (o): ToolPin => ({
        ...base(c, o.tool),
        status: "pinned",
        pinnedHash: o.hash,
        pinnedDefinition: o.definition,
        pendingHash: null,
        pendingDefinition: null,
        firstSeenAt: c.at,
        changedAt: c.at,
        decidedAt: null,
        decidedBy: null,
      }),
    );
    return { writes, audit: [audit(null, "first_seen", null)], value: [{ tool: null, change: "first_seen" }] };
  }
  const byTool = new Map(current.map((p) => [p.tool, p]));
  const writes: ToolPin[] = [];
  const rows: AuditEvent[] = [];
  const changes: PinChange[] = [];
  const record = (p: ToolPin, change: PinChange["change"], hash: string) => {
    writes.push(p);
    rows.push(audit(p.tool, change, hash));
    changes.push({ tool: p.tool, change });
  };
  for (const o of observed) {
    const p = byTool.get(o.tool);
    const pending = { pendingHash: o.hash, pendingDefinition: o.definition, changedAt: c.at };
    if (!p) {
      record(
        {
          ...base(c, o.tool),
          status: "new",
          pinnedHash: null,
          pinnedDefinition: null,
          ...pending,
          firstSeenAt: c.at,
          decidedAt: null,
          decidedBy: null,
        },
        "new",
        o.hash,
      );
      continue;
    }
    switch (p.status) {
      case "pinned":
        if (o.hash !== p.pinnedHash) record({ ...p, status: "quarantined", ...pending }, "quarantined", o.hash);
        break;
      case "quarantined":
        // The latest changed definition is the one an admin reviews (an accept names its hash).
        if (o.hash !== p.pendingHash && o.hash !== p.pinnedHash) record({ ...p, ...pending }, "quarantined", o.hash);
        break;
      case "new":
        if (o.hash !== p.pendingHash) record({ ...p, ...pending }, "new", o.hash);
        break;
      case "rejected":
        if (o.hash === p.pendingHash) break;
        if (p.pinnedHash !== null && o.hash === p.pinnedHash)
          record(
            { ...p, status: "pinned", pendingHash: null, pendingDefinition: null, changedAt: c.at },
            "restored",
            o.hash,
          );
        else
          record(
            { ...p, status: p.pinnedHash === null ? "new" : "quarantined", ...pending },
            p.pinnedHash === null ? "new" : "quarantined",
            o.hash,
          );
        break;
    }
  }
  return { writes, audit: rows, value: changes };
}

/** An admin's decision on one tool; `expectedHash` binds it to the definition the admin reviewed. */
export interface PinDecision {
  readonly kind: "accept" | "reject";
  readonly tool: string;
  readonly by: string;
  readonly at: number;
  readonly expectedHash?: string;
}

/** Why a decision did not apply. */
export type DecisionRefusal = "not_found" | "nothing_pending" | "hash_mismatch";

/** What a decision did: the pin as it now stands, or why nothing changed. */
export type DecisionResult =
  | { readonly kind: "done"; readonly pin: ToolPin }
  | { readonly kind: "refused"; readonly reason: DecisionRefusal; readonly pin?: ToolPin };

/**
 * Accept pins the waiting definition (a quarantined, new or rejected one); reject refuses it and
 * keeps the old pin (the tool stays refused while the vendor serves the rejected definition).
 * A definition that changed after the admin looked (`expectedHash`) is not decided on.
 */
export function decide(
  current: readonly ToolPin[],
  d: PinDecision,
  teamId: string,
  service: string,
): PinWrite<DecisionResult> {
  const p = current.find((x) => x.tool === d.tool);
  const audit = (decision: string, hash: string | null): AuditEvent => ({
    at: d.at,
    event: "tool_pin",
    teamId,
    service,
    tool: d.tool,
    decision,
    argsHash: hash,
    actor: d.by,
  });
  const refuse = (reason: DecisionRefusal): PinWrite<DecisionResult> => ({
    writes: [],
    audit: [audit(`refused_${reason}`, p?.pendingHash ?? null)],
    value: { kind: "refused", reason, ...(p ? { pin: p } : {}) },
  });
  if (!p) return refuse("not_found");
  if (p.status === "pinned" || p.pendingHash === null || (d.kind === "reject" && p.status === "rejected"))
    return refuse("nothing_pending");
  if (d.expectedHash !== undefined && d.expectedHash !== p.pendingHash) return refuse("hash_mismatch");
  const decided = { changedAt: d.at, decidedAt: d.at, decidedBy: d.by };
  const pin: ToolPin =
    d.kind === "accept"
      ? {
          ...p,
          status: "pinned",
          pinnedHash: p.pendingHash,
          pinnedDefinition: p.pendingDefinition,
          pendingHash: null,
          pendingDefinition: null,
          ...decided,
        }
      : { ...p, status: "rejected", ...decided };
  return {
    writes: [pin],
    audit: [audit(d.kind === "accept" ? "accepted" : "rejected", p.pendingHash)],
    value: { kind: "done", pin },
  };
}

/** How the policy stage planned a call against the pins: which class rule it applied. */
export type PlannedPin = "pinned" | "new" | "unseen";

/** The policy-stage verdict: refuse a quarantined, rejected or (untrusted) new tool, else run under `planned`. */
export type PinGate =
  | { readonly kind: "refuse"; readonly status: "quarantined" | "rejected" | "new" }
  | { readonly kind: "run"; readonly planned: PlannedPin };

/** What a service's registry entry says of tools its vendor adds after the first listing. */
export interface NewToolTrust {
  /** `trustNewTools`: a new tool runs (under the fail-closed class) before an admin accepts it. */
  readonly trustNewTools: boolean;
}

/**
 * Before any approval: a quarantined or rejected tool is refused (thread grants do not cover it); a
 * new tool is refused until an admin accepts it, unless the service trusts new tools, when it runs
 * under the fail-closed class; a pinned one, or one no vendor of the team ever listed (nothing to
 * pin: the registry's word is all there is), under the registry's class.
 */
export function gate(pin: ToolPin | undefined, trust: NewToolTrust = { trustNewTools: false }): PinGate {
  if (pin?.status === "quarantined" || pin?.status === "rejected") return { kind: "refuse", status: pin.status };
  if (pin?.status === "pinned") return { kind: "run", planned: "pinned" };
  if (pin?.status === "new")
    return trust.trustNewTools ? { kind: "run", planned: "new" } : { kind: "refuse", status: "new" };
  return { kind: "run", planned: "unseen" };
}

/** What the leased vendor served at its last reading: each tool's hash, or nothing if its list could not be read and pinned. */
export type VendorObservation =
  | { readonly kind: "read"; readonly hashes: ReadonlyMap<string, string> }
  | { readonly kind: "unread" };

/**
 * Why the run stage refuses: the tool is quarantined, new and not reviewed, the vendor's list is
 * unknown, or the tool turned new since the policy stage.
 */
export type RunRefusal = "tool_quarantined" | "tool_unreviewed" | "tool_unverified" | "tool_changed";

/**
 * The last check, on the leased vendor, before its tool runs: a definition this vendor served must
 * be the pinned one. A new tool runs only when the service trusts new tools and the policy already
 * applied the fail-closed class (or ran it on the caller's own connection, where class does not
 * matter). A tool this vendor does not list has no definition to check and runs as the policy
 * planned. An unreadable list proves nothing.
 */
export function runVerdict(f: {
  planned: PlannedPin;
  ownConnection: boolean;
  observation: VendorObservation;
  pin: ToolPin | undefined;
  tool: string;
  trustNewTools: boolean;
}): { kind: "ok" } | { kind: "refuse"; code: RunRefusal } {
  if (f.observation.kind === "unread") return { kind: "refuse", code: "tool_unverified" };
  const { pin } = f;
  if (pin?.status === "quarantined" || pin?.status === "rejected") return { kind: "refuse", code: "tool_quarantined" };
  const served = f.observation.hashes.get(f.tool);
  if (served !== undefined) {
    // Listed by this vendor yet absent from the store: the observation was not recorded.
    if (pin === undefined) return { kind: "refuse", code: "tool_unverified" };
    if (pin.status === "pinned")
      return served === pin.pinnedHash ? { kind: "ok" } : { kind: "refuse", code: "tool_quarantined" };
  }
  if (pin?.status === "new") {
    if (!f.trustNewTools) return { kind: "refuse", code: "tool_unreviewed" };
    return f.planned === "new" || f.ownConnection ? { kind: "ok" } : { kind: "refuse", code: "tool_changed" };
  }
  return { kind: "ok" };
}

/** Whether a refusal says only that this vendor's reading is out of date with the pin (a fresh reading may clear it). */
export function staleReading(f: { observation: VendorObservation; pin: ToolPin | undefined; tool: string }): boolean {
  if (f.observation.kind === "unread") return true;
  const served = f.observation.hashes.get(f.tool);
  // A pinned tool this vendor served otherwise at that reading: it may serve the pinned one now
  // (an accept since, or a change back). A quarantine or rejection stands whatever it serves.
  return f.pin?.status === "pinned" && served !== undefined && served !== f.pin.pinnedHash;
}
