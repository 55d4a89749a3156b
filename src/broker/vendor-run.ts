import type { CallToolResult, Client } from "@modelcontextprotocol/client";
import { errorMessage } from "../domain/errors.js";
import { progressMessage } from "../events/call-event.js";
import { PinRefusedError } from "../pinning/errors.js";
import { PoolError } from "../pool/errors.js";
import type { VendorHandle } from "../pool/launcher.js";
import type { PoolLease } from "../pool/pool.js";
import { isStoreUnavailable } from "../store/errors.js";
import { type CallPlan, eventBase } from "./call-plan.js";
import type { BrokerDeps, CallExtra } from "./deps.js";
import type { FailureCode, MessageFacts } from "./outcome.js";
import { sanitizeVendorText } from "./result-hygiene.js";
import { callVendorTool, VendorCallError } from "./vendor-call.js";

// The pool-lease stage of a call: the vendor runs the planned tool under the broker's deadline,
// with progress forwarded (redacted) to the caller; and how each way it can fail is named.

/** One vendor run: the plan, the lease (credential session) and the caller's signal and progress. */
export interface VendorRun {
  readonly plan: CallPlan;
  readonly lease: PoolLease;
  readonly extra: CallExtra;
  /** The pin check on the leased vendor, run after it started and before the tool: throws PinRefusedError to refuse. */
  readonly verify?: (client: Client) => Promise<void>;
}

/**
 * Runs the planned tool on the lease's vendor; throws PoolError or VendorCallError. The vendor is
 * always asked for progress: each report becomes a (redacted) `call.progress` event, and is
 * forwarded to the caller when the caller asked for progress.
 */
export async function runOnVendor(
  d: Pick<BrokerDeps, "pool" | "clock" | "callTimeoutMs" | "events">,
  r: VendorRun,
): Promise<CallToolResult> {
  const { extra, lease } = r;
  // Progress is forwarded in order, and all of it before the result: a client that handles the
  // response first would drop a late progress notification for a finished request.
  let forwarded: Promise<unknown> = Promise.resolve();
  let progressed = false;
  const result = await d.pool.withLease(lease, async (client, handle) => {
    // On this very vendor, after its start listeners recorded its tool list: nothing unpinned runs.
    await r.verify?.(client);
    const t0 = performance.now();
    return callVendorTool(client, r.plan.tool, r.plan.args, {
      timeoutMs: d.callTimeoutMs,
      clock: d.clock,
      signal: extra.signal,
      onprogress: (p) => {
        // Redacted once, with the same credential forms as the result; the event and the caller get the same text.
        const message = p.message ? lease.redactor.text(p.message) : undefined;
        d.events.emit({
          type: "call.progress",
          ...eventBase(r.plan, d.clock.now()),
          progress: p.progress,
          total: p.total ?? null,
          message: progressMessage(message),
        });
        if (!extra.progress) return;
        progressed = true;
        const update = {
          progress: p.progress,
          ...(p.total !== undefined ? { total: p.total } : {}),
          ...(message ? { message } : {}),
        };
        forwarded = forwarded.then(() => extra.progress?.(update)).catch(() => {});
      },
    })
      .catch(async (err: unknown) => {
        throw handle.kind === "remote" ? await remoteLost(handle, err) : err;
      })
      .finally(() => {
        if (extra.trace) extra.trace.vendorMs = performance.now() - t0;
      });
  });
  if (progressed) {
    await forwarded;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return result;
}

/**
 * A remote call that ended because the transport failed or closed: that session is gone (closed
 * here, so the pool drops it and the next call opens a new one) and the call is not retried.
 */
async function remoteLost(handle: VendorHandle, err: unknown): Promise<unknown> {
  if (!(err instanceof VendorCallError) || (err.end.kind !== "closed" && err.end.kind !== "other")) return err;
  const lost = handle.lostReason?.() ?? "connection_closed";
  await handle.close().catch(() => {});
  // A 401/403 mid-session: the vendor stopped accepting this credential (revoked on its side).
  if (lost === "http_401" || lost === "http_403")
    return new PoolError("credential_rejected", `the remote vendor rejected the credential (${lost})`, {
      cause: err,
      detail: lost,
    });
  return new PoolError("vendor_disconnected", `the remote session was lost (${lost})`, { cause: err, detail: lost });
}

/** A failure named for the caller: the code and the facts its message may mention. */
export interface NamedFailure {
  readonly code: FailureCode;
  readonly facts?: MessageFacts;
}

/** Names a failed vendor run; a hung vendor is killed on the way (the next call starts fresh). */
export async function vendorFailure(
  d: Pick<BrokerDeps, "pool" | "log">,
  r: VendorRun,
  thrown: unknown,
): Promise<NamedFailure> {
  const connectionId = r.lease.connection.id;
  const redactor = r.lease.redactor;
  let err = thrown;
  if (err instanceof PinRefusedError) return { code: err.code };
  // The database went away while the vendor started (its tool list is recorded before any tool runs).
  if (isStoreUnavailable(err)) return { code: "store_unavailable" };
  if (err instanceof PoolError) {
    switch (err.code) {
      case "pool_busy":
        return { code: "pool_busy" };
      case "backoff":
        return {
          code: "vendor_backoff",
          facts: { ...(err.retryAt ? { retryAt: err.retryAt } : {}), ...(err.detail ? { detail: err.detail } : {}) },
        };
      case "vendor_unreachable":
        return {
          code: "vendor_unreachable",
          facts: { ...(err.retryAt ? { retryAt: err.retryAt } : {}), ...(err.detail ? { detail: err.detail } : {}) },
        };
      case "vendor_incompatible":
        return { code: "vendor_incompatible", facts: { detail: err.detail ?? "no version in common" } };
      case "vendor_disconnected":
        d.log.warn("remote vendor session lost during a call", { connectionId, error: err.detail ?? "" });
        return { code: "vendor_disconnected", facts: { detail: err.detail ?? "connection_closed" } };
      case "credential_rejected":
        return { code: "credential_rejected", facts: { detail: err.detail ?? "rejected" } };
      case "spawn_failed":
      case "initialize_failed":
        d.log.warn("vendor start failed", {
          connectionId,
          code: err.code,
          cause: redactor.text(err.cause === undefined ? "" : errorMessage(err.cause)).slice(0, 300),
        });
        return { code: "vendor_start_failed", facts: { detail: err.detail ?? err.code } };
      case "credential_incomplete":
        return { code: "credential_unusable" };
      case "vendor_misbehaved":
        return { code: "vendor_misbehaved" };
      default:
        d.log.warn("vendor start failed", {
          connectionId,
          code: err.code,
          cause: redactor.text(err.cause === undefined ? "" : errorMessage(err.cause)).slice(0, 300),
        });
        return { code: "vendor_crashed" };
    }
  }
  if (r.extra.signal?.aborted) return { code: "cancelled" };
  if (err instanceof VendorCallError) {
    // Decided by the broker's own timer and transport, never by the code a vendor chose.
    switch (err.end.kind) {
      case "cancelled":
        return { code: "cancelled" };
      case "timeout":
        await d.pool.drop(connectionId, "kill", "timeout");
        return { code: "vendor_timeout" };
      case "closed":
        return { code: "vendor_crashed" };
      case "vendor_error":
        return { code: "vendor_error", facts: { detail: sanitizeVendorText(redactor.text(err.end.message)) } };
      case "other":
        err = err.end.error;
    }
  }
  d.log.error("vendor call failed", { connectionId, error: redactor.text(errorMessage(err)) });
  return { code: "vendor_crashed" };
}
