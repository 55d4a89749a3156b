import type { Clock } from "../clock/clock.js";

// Why a connection's vendor cannot be used right now, as the launcher last saw it: a remote vendor
// in connect backoff, a remote that rejected the credential, or a stdio command that failed to
// start. The agent reads it (connections_list, mcp_describe) before it calls; errors are kept as
// short classes the broker made up itself ("ECONNREFUSED", "http_503"), never vendor text.

/** First backoff after a failed remote connect; it doubles per consecutive failure up to the max. */
export const BACKOFF_START_MS = 60_000;
export const BACKOFF_MAX_MS = 15 * 60_000;
/** The most connections the book remembers (the oldest record is forgotten first). */
export const AVAILABILITY_MAX = 10_000;

/** The backoff state of a remote vendor connection after failed connects. */
export interface BackoffState {
  readonly failures: number;
  readonly retryAt: number;
  readonly lastError: string;
}

/** Why a connection's vendor cannot be used now, with when that was seen and the error class. */
export type Unavailability =
  | {
      readonly reason: "backoff";
      readonly since: number;
      readonly retryAt: number;
      readonly failures: number;
      readonly lastError: string;
    }
  | { readonly reason: "credential_rejected"; readonly since: number; readonly lastError: string }
  | { readonly reason: "start_failed"; readonly since: number; readonly lastError: string }
  | { readonly reason: "incompatible"; readonly since: number; readonly lastError: string };

/** Per-connection availability records, bounded; written by the launcher, read by the broker. */
export class AvailabilityBook {
  private readonly records = new Map<string, Unavailability>();

  constructor(
    private readonly clock: Clock,
    private readonly max = AVAILABILITY_MAX,
  ) {}

  /** The connection's backoff while it lasts (a connect before `retryAt` is refused without trying). */
  backoffOf(connectionId: string): BackoffState | undefined {
    const r = this.records.get(connectionId);
    return r?.reason === "backoff" && r.retryAt > this.clock.now() ? r : undefined;
  }

  /** Why the connection's vendor cannot be used now; a backoff that ran out is no longer reported. */
  of(connectionId: string): Unavailability | undefined {
    const r = this.records.get(connectionId);
    if (r?.reason === "backoff" && r.retryAt <= this.clock.now()) return undefined;
    return r;
  }

  /** A remote connect failed: the next backoff (1 min doubling to 15 min after the last failure). */
  connectFailed(connectionId: string, lastError: string): BackoffState & { readonly reason: "backoff" } {
    const prev = this.records.get(connectionId);
    const failures = (prev?.reason === "backoff" ? prev.failures : 0) + 1;
    const now = this.clock.now();
    const b = {
      reason: "backoff",
      since: now,
      retryAt: now + Math.min(BACKOFF_START_MS * 2 ** (failures - 1), BACKOFF_MAX_MS),
      failures,
      lastError,
    } as const;
    this.put(connectionId, b);
    return b;
  }

  /** The remote vendor refused the credential (401/403): no backoff, a new credential must come. */
  credentialRejected(connectionId: string, lastError: string): void {
    this.put(connectionId, { reason: "credential_rejected", since: this.clock.now(), lastError });
  }

  /** A stdio command did not start (spawn error or no initialize); the next call tries again. */
  startFailed(connectionId: string, lastError: string): void {
    this.put(connectionId, { reason: "start_failed", since: this.clock.now(), lastError });
  }

  /** The vendor speaks another MCP protocol version: no backoff (the registry's `protocol` fixes it, not waiting). */
  incompatible(connectionId: string, versions: string): void {
    this.put(connectionId, { reason: "incompatible", since: this.clock.now(), lastError: versions });
  }

  /** The vendor started: whatever was recorded is over; true when something was. */
  started(connectionId: string): boolean {
    return this.records.delete(connectionId);
  }

  private put(connectionId: string, r: Unavailability): void {
    this.records.delete(connectionId);
    this.records.set(connectionId, r);
    // Bounded: the oldest record goes first (Map iterates in insertion order).
    while (this.records.size > this.max) {
      const oldest = this.records.keys().next().value;
      if (oldest === undefined) break;
      this.records.delete(oldest);
    }
  }
}
