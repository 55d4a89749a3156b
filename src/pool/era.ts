import {
  type CallToolResult,
  Client,
  type ClientOptions,
  ProtocolError,
  type RequestOptions,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  type StandardSchemaV1,
  UnsupportedProtocolVersionError,
} from "@modelcontextprotocol/client";
import type { Service } from "../config/registry.js";

// Which MCP protocol era the broker speaks to a vendor: the 2025 handshake (`initialize`, sessions)
// or the stateless 2026-07-28 revision (`server/discover`, `_meta` on every request). A registry
// entry names it (`protocol`) or leaves it to `auto`; the era each vendor was found to speak is
// remembered per service for `registry inspect` and mcp_describe. A vendor that speaks none of the
// versions asked for is incompatible: a setting to fix, never an outage to wait out.

/** A registry entry's `protocol`. */
export type VendorProtocol = "auto" | "2025-11-25" | "2026-07-28";

/** The revisions the broker speaks to vendors, newest first. */
export const LEGACY_REVISION = "2025-11-25";
export const MODERN_REVISION = "2026-07-28";

/** A service's setting: what it names, else `auto` for remote vendors and the 2025 handshake for stdio ones. */
export function vendorProtocolOf(service: Service): VendorProtocol {
  return service.entry.protocol ?? (service.entry.transport.type === "stdio" ? LEGACY_REVISION : "auto");
}

/** The SDK client's version negotiation for a setting (the 2025 handshake is its default, unnegotiated). */
export function negotiationOf(protocol: VendorProtocol): Pick<ClientOptions, "versionNegotiation"> {
  if (protocol === "auto") return { versionNegotiation: { mode: "auto" } };
  if (protocol === MODERN_REVISION) return { versionNegotiation: { mode: { pin: MODERN_REVISION } } };
  return {};
}

type Codec = ReturnType<VendorClient["codec"]>;

/**
 * The SDK client the broker speaks to vendors with. Its `callTool` asks `request()` without a result
 * schema, so the SDK looks the schema up by validating `undefined` first (a probe that fails, and
 * builds zod's error messages, on every call) before validating the result. Here a tools/call gets
 * its result schema up front: the era codec's own validation, one pass, same outcome and errors.
 */
export class VendorClient extends Client {
  private toolResult: { readonly codec: Codec; readonly schema: StandardSchemaV1<unknown, CallToolResult> } | undefined;

  override request(
    request: { method: string; params?: Record<string, unknown> },
    schemaOrOptions?: StandardSchemaV1 | RequestOptions,
    options?: RequestOptions,
  ): Promise<never> {
    const call = super.request.bind(this) as (r: unknown, s?: unknown, o?: unknown) => Promise<never>;
    if (request.method !== "tools/call" || (schemaOrOptions && "~standard" in schemaOrOptions))
      return call(request, schemaOrOptions, options);
    return call(request, this.toolResultSchema(), schemaOrOptions);
  }

  private codec() {
    return this._wireCodec();
  }

  /** The negotiated era's tools/call result validation as a Standard Schema; made once per era. */
  private toolResultSchema(): StandardSchemaV1<unknown, CallToolResult> {
    const codec = this.codec();
    if (this.toolResult?.codec !== codec) {
      const validate = (value: unknown): StandardSchemaV1.Result<CallToolResult> => {
        const o = codec.validateResult("tools/call", value);
        if (o.ok) return { value: o.value as CallToolResult };
        return { issues: [{ message: o.reason === "invalid" ? o.message : "not-in-era: tools/call" }] };
      };
      this.toolResult = { codec, schema: { "~standard": { version: 1, vendor: "slaude-connect", validate } } };
    }
    return this.toolResult.schema;
  }
}

/** One line for people: the revision spoken, how, and the setting that chose it. */
export function eraText(e: EraFound): string {
  const how = e.era === "modern" ? "stateless, server/discover" : "initialize handshake";
  return `MCP ${e.version} (${how}; protocol setting "${e.protocol}")`;
}

/** The era a connected client negotiated, as recorded: the revision and whether it is the stateless one. */
export interface EraFound {
  readonly version: string;
  readonly era: "modern" | "legacy";
  readonly protocol: VendorProtocol;
  readonly at: number;
}

/** What a started client negotiated, if it says (a client the pool did not start may not). */
export function eraOf(client: Client, protocol: VendorProtocol, at: number): EraFound | undefined {
  const version = client.getNegotiatedProtocolVersion?.();
  const era = client.getProtocolEra?.();
  if (!version || !era || !REVISION.test(version)) return undefined;
  return { version, era, protocol, at };
}

/** The most services the book remembers (the registry bounds them; this bounds the book regardless). */
export const ERA_BOOK_MAX = 1_000;

/** The era each service's vendor last spoke, by service name; bounded, oldest forgotten first. */
export class EraBook {
  private readonly found = new Map<string, EraFound>();

  constructor(private readonly max = ERA_BOOK_MAX) {}

  record(service: string, e: EraFound): void {
    this.found.delete(service);
    this.found.set(service, e);
    while (this.found.size > this.max) {
      const oldest = this.found.keys().next().value;
      if (oldest === undefined) break;
      this.found.delete(oldest);
    }
  }

  of(service: string): EraFound | undefined {
    return this.found.get(service);
  }
}

/** A protocol revision as the spec writes them; nothing else a vendor sends is repeated. */
const REVISION = /^\d{4}-\d{2}-\d{2}$/;

/** The versions a refusal names: what the broker asked for and what the vendor offers (when it said). */
export interface Incompatibility {
  readonly asked: string;
  readonly offered: readonly string[];
}

/** The detail a vendor_incompatible refusal carries: only revision strings, never vendor text. */
export function incompatibilityText(i: Incompatibility): string {
  const offered = i.offered.length ? i.offered.join(", ") : "none of the versions asked for";
  return `asked for ${i.asked}; the vendor speaks ${offered}`;
}

/**
 * Whether a failed connect was a version mismatch, and which versions: a `-32022` answer (over
 * HTTP, a 400 whose body carries it), or a negotiation that found no version in common. Outages
 * (a network error or a 5xx during the probe, a timeout) are not: they keep their own classes.
 */
export function incompatibilityOf(err: unknown, protocol: VendorProtocol): Incompatibility | undefined {
  const asked = protocol === "auto" ? `${MODERN_REVISION} or ${LEGACY_REVISION}` : protocol;
  if (err instanceof UnsupportedProtocolVersionError) return { asked, offered: revisions(err.supported) };
  if (err instanceof ProtocolError && err.code === UNSUPPORTED_VERSION) return { asked, offered: offeredIn(err.data) };
  if (err instanceof SdkHttpError) {
    if (err.status !== 400 || typeof err.data.text !== "string") return undefined;
    const rpc = rpcErrorIn(err.data.text);
    return rpc?.code === UNSUPPORTED_VERSION ? { asked, offered: offeredIn(rpc.data) } : undefined;
  }
  // No version in common, said without an underlying failure: a network error or a closed pipe carries its cause.
  if (err instanceof SdkError && err.code === SdkErrorCode.EraNegotiationFailed && err.cause === undefined) {
    return { asked, offered: protocol === MODERN_REVISION ? ["the 2025 era only"] : [] };
  }
  return undefined;
}

const UNSUPPORTED_VERSION = -32022;

function offeredIn(data: unknown): string[] {
  const supported = typeof data === "object" && data !== null ? (data as { supported?: unknown }).supported : undefined;
  return revisions(supported);
}

function revisions(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string" && REVISION.test(x)).slice(0, 8) : [];
}

function rpcErrorIn(body: string): { code: unknown; data: unknown } | undefined {
  try {
    const doc: unknown = JSON.parse(body.slice(0, 64 * 1024));
    const error = typeof doc === "object" && doc !== null ? (doc as { error?: unknown }).error : undefined;
    if (typeof error !== "object" || error === null) return undefined;
    return { code: (error as { code?: unknown }).code, data: (error as { data?: unknown }).data };
  } catch {
    return undefined;
  }
}
