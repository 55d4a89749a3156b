import type { Service } from "../config/registry.js";
import type { Connection } from "../store/records.js";
import type { ChildStopReason, RemoteUnavailableReason, VendorLifecycleEvent } from "./lifecycle-event.js";

// The pool's and the launcher's events, built here so each emit in their code is one line.

/** Which vendor an event is about: its connection, team, service and transport. */
export interface VendorTag {
  readonly teamId: string;
  readonly connectionId: string;
  readonly service: string;
  readonly transport: "stdio" | "remote";
}

/** The tag of `connection`'s vendor of `service`. */
export function vendorTag(connection: Pick<Connection, "id" | "teamId">, service: Service): VendorTag {
  return {
    teamId: connection.teamId,
    connectionId: connection.id,
    service: service.name,
    transport: service.entry.transport.type === "http" ? "remote" : "stdio",
  };
}

/** A vendor started (a child spawned and initialized, or a remote session connected). */
export function childStarted(t: VendorTag, at: number): VendorLifecycleEvent {
  return { type: "child.started", at, ...t };
}

/** A vendor stopped, and why. */
export function childStopped(t: VendorTag, reason: ChildStopReason, at: number): VendorLifecycleEvent {
  return { type: "child.stopped", at, ...t, reason };
}

/** A remote vendor became unusable (the first failure of a run of them). */
export function remoteUnavailable(
  t: VendorTag,
  reason: RemoteUnavailableReason,
  error: string,
  retryAt: number | null,
  at: number,
): VendorLifecycleEvent {
  return { type: "remote.unavailable", at, ...t, reason, error: error.slice(0, 64), retryAt };
}

/** A remote vendor that was unusable connected again. */
export function remoteRecovered(t: VendorTag, at: number): VendorLifecycleEvent {
  return { type: "remote.recovered", at, ...t };
}
