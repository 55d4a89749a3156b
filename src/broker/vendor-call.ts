import { type CallToolResult, type Client, ProtocolError } from "@modelcontextprotocol/client";
import type { Clock } from "../clock/clock.js";

// One vendor tools/call with the broker's own deadline. How a call ended is decided from the
// broker's own signals only (its own timer, the caller's AbortSignal, the transport's close), never
// from the JSON-RPC code a vendor put in its answer: a vendor can send -32001 ("Request timed out")
// or -32000 ("Connection closed") on purpose, and must not thereby get itself killed or restarted.

/** Why a vendor call ended without a result, as the broker itself observed it. */
export type VendorCallEnd =
  | { readonly kind: "timeout" }
  | { readonly kind: "closed" }
  | { readonly kind: "cancelled" }
  | { readonly kind: "vendor_error"; readonly message: string }
  | { readonly kind: "other"; readonly error: unknown };

/** Thrown by `callVendorTool`: carries the broker's own reading of how the call ended. */
export class VendorCallError extends Error {
  constructor(readonly end: VendorCallEnd) {
    super(`vendor call ended: ${end.kind}`);
    this.name = "VendorCallError";
  }
}

/** Options of one vendor call. */
export interface VendorCallOptions {
  readonly timeoutMs: number;
  /** Arms the broker's deadline. */
  readonly clock: Clock;
  readonly signal?: AbortSignal | undefined;
  readonly onprogress?:
    | ((p: { progress: number; total?: number | undefined; message?: string | undefined }) => void)
    | undefined;
}

/** The reason our own timer aborts with (a vendor cannot make our own signal abort). */
class BrokerDeadline extends Error {}

/**
 * Calls `name` on the vendor; resolves with its (schema-validated) result or throws a
 * `VendorCallError` saying whether the broker's timer fired, the transport closed, the caller
 * cancelled, or the vendor answered with an error.
 */
export async function callVendorTool(
  client: Client,
  name: string,
  args: Record<string, unknown>,
  o: VendorCallOptions,
): Promise<CallToolResult> {
  const own = new AbortController();
  // The reason is made when the timer fires: an Error captures a stack, which every call would pay for.
  const timer = o.clock.setTimeout(
    () => own.abort(new BrokerDeadline("the broker's call deadline passed")),
    o.timeoutMs,
    { unref: true },
  );
  // The caller's cancel is forwarded by hand, not through AbortSignal.any: Node keeps a composite
  // signal that has abort listeners (the SDK adds one and never removes it) alive until it aborts,
  // so every finished call would stay in memory with its trace and audit.
  const forward = () => own.abort(o.signal?.reason);
  if (o.signal?.aborted) forward();
  else o.signal?.addEventListener("abort", forward, { once: true });
  try {
    return await client.callTool(
      { name, arguments: args },
      {
        signal: own.signal,
        // The SDK's own timeout only backs ours up; ours fires first, so its SdkError never decides.
        timeout: o.timeoutMs + 60_000,
        maxTotalTimeout: o.timeoutMs + 60_000,
        ...(o.onprogress ? { onprogress: o.onprogress } : {}),
      },
    );
  } catch (err) {
    if (o.signal?.aborted) throw new VendorCallError({ kind: "cancelled" });
    if (own.signal.aborted) throw new VendorCallError({ kind: "timeout" });
    // The SDK drops its transport when the transport reports close, before failing pending calls.
    if (client.transport === undefined) throw new VendorCallError({ kind: "closed" });
    if (err instanceof ProtocolError) throw new VendorCallError({ kind: "vendor_error", message: err.message });
    throw new VendorCallError({ kind: "other", error: err });
  } finally {
    timer.cancel();
    o.signal?.removeEventListener("abort", forward);
  }
}
