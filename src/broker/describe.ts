import { createHash } from "node:crypto";
import type { Client } from "@modelcontextprotocol/client";
import { z } from "zod";
import { FAIL_CLOSED_CLASS, type Service, type ToolClass } from "../config/registry.js";
import { canonicalJson } from "../domain/canonical-json.js";
import { errorName } from "../domain/errors.js";
import type { Redactor } from "../hygiene/redact.js";
import { definitionHash, definitionOf, type ToolDefinition } from "../pinning/definition.js";
import { eraText } from "../pool/era.js";
import { PoolError } from "../pool/errors.js";
import { listAllTools } from "../pool/tool-paging.js";
import type { PinStatus, ToolPin } from "../store/records.js";
import type { BrokerDeps } from "./deps.js";
import { stems } from "./word-forms.js";

/** A vendor tool as cached: its pinned parts (src/pinning/definition.ts), redacted, so its hash can be checked against the pin. */
const cachedTool = z
  .object({
    name: z.string(),
    description: z.string().optional(),
    inputSchema: z.record(z.string(), z.unknown()).optional(),
    annotations: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();
type CachedTool = z.infer<typeof cachedTool>;

/** A tool as mcp_describe shows it, with the class the broker will apply. */
export interface DescribedTool {
  readonly name: string;
  readonly description: string;
  readonly class: { readonly access: ToolClass["access"]; readonly write: boolean; readonly classified: boolean };
  readonly inputSchema?: Record<string, unknown>;
  /** The definition against its pin (absent before the service's vendor was first seen). */
  readonly pin?: PinStatus;
  /** No admin reviewed this definition (a new tool): unless the service trusts new tools, only its name is shown. */
  readonly unreviewed?: true;
}

/** mcp_describe's answer. */
export interface DescribeResult {
  readonly service: string;
  readonly displayName: string;
  readonly source: "cache" | "registry";
  readonly contentHash: string | null;
  readonly fetchedAt: string | null;
  readonly tools: readonly DescribedTool[];
  readonly note?: string;
  /** The MCP era its vendor spoke at its last start since the broker started (src/pool/era.ts). */
  readonly protocol?: {
    readonly version: string;
    readonly era: "modern" | "legacy";
    readonly setting: string;
    readonly seenAt: string;
  };
}

/** Whose vendor the metadata came from: its team keys the cache, its credential's redactor cleans it. */
export interface MetadataOrigin {
  readonly teamId: string;
  readonly redactor: Redactor;
}

/**
 * Stores a service's tools/list in the team's metadata cache, redacted, with its content hash, and
 * returns each tool's (redacted) definition for pinning; undefined when the list could not be read.
 */
export async function refreshMetadata(
  deps: Pick<BrokerDeps, "store" | "clock" | "log">,
  service: Service,
  client: Client,
  origin: MetadataOrigin,
): Promise<ToolDefinition[] | undefined> {
  try {
    // Paged within fixed limits (src/pool/tool-paging.ts): an endless pager is stopped, not cached.
    const listed = await listAllTools(client);
    // Redacted before it is hashed, pinned or cached: a vendor may put its credential in any metadata
    // text. The cache keeps exactly what is pinned, so mcp_describe can check each tool's hash.
    const definitions = listed.map((t) => origin.redactor.deep(definitionOf(t)));
    const clean = [...definitions].sort((a, b) => (a.name < b.name ? -1 : 1));
    const contentHash = createHash("sha256").update(canonicalJson(clean)).digest("hex");
    const prev = await deps.store.toolMetadata.get(origin.teamId, service.name);
    if (prev?.contentHash !== contentHash)
      await deps.store.toolMetadata.put({
        teamId: origin.teamId,
        service: service.name,
        contentHash,
        tools: clean,
        fetchedAt: deps.clock.now(),
      });
    return definitions;
  } catch (err) {
    // A vendor over the paging limits is stopped by the pool (the error fails its calls).
    if (err instanceof PoolError && err.code === "vendor_misbehaved") throw err;
    // Only the error's kind: vendor text may carry the credential.
    deps.log.warn("tools/list refresh failed", {
      service: service.name,
      error: errorName(err),
      code: String((err as { code?: unknown }).code ?? ""),
    });
    return undefined;
  }
}

/** Ranks tools lexically: name matches outweigh description matches; ties by name. */
export function rankTools<T extends { name: string; description: string }>(
  tools: readonly T[],
  query: string,
  limit = 20,
): T[] {
  // Compared as stems, so "issues" finds create_issue and "comments" add_comment.
  const terms = stems(query);
  if (terms.length === 0) return tools.slice(0, limit);
  const scored = tools.map((t) => {
    const name = t.name.toLowerCase();
    const nameParts = new Set(stems(name));
    const desc = new Set(stems(t.description));
    let score = 0;
    for (const term of terms) {
      if (name === term) score += 10;
      else if (nameParts.has(term)) score += 6;
      else if (name.includes(term)) score += 4;
      if (desc.has(term)) score += 1;
    }
    return { t, score };
  });
  return scored
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || (a.t.name < b.t.name ? -1 : 1))
    .slice(0, limit)
    .map((s) => s.t);
}

/** Builds the describe answer from the caller's team's cache (spawning nothing), or from the registry when nothing is cached. */
export async function describeService(
  deps: Pick<BrokerDeps, "store" | "pins"> & Partial<Pick<BrokerDeps, "backoff">>,
  service: Service,
  opts: { teamId: string; tool?: string; query?: string },
): Promise<DescribeResult | { notFound: string }> {
  const meta = await deps.store.toolMetadata.get(opts.teamId, service.name);
  const pins = await deps.pins.pins({ teamId: opts.teamId, service: service.name });
  const classOf = (name: string) => {
    const c = service.classOf(name);
    return { access: c.access, write: c.write, classified: service.isClassified(name) };
  };
  let tools: DescribedTool[];
  let source: "cache" | "registry";
  if (meta) {
    source = "cache";
    tools = meta.tools.flatMap((raw) => {
      const p = cachedTool.safeParse(raw);
      if (!p.success) return [];
      return [shown(p.data, classOf(p.data.name), pins.get(p.data.name), service.entry.trustNewTools)];
    });
  } else {
    source = "registry";
    tools = Object.keys(service.entry.tools)
      .sort()
      .map((name) => ({ name, description: "", class: classOf(name) }));
  }
  const era = deps.backoff?.eraOf?.(service.name);
  const protocol = era
    ? { version: era.version, era: era.era, setting: era.protocol, seenAt: new Date(era.at).toISOString() }
    : undefined;
  const head = {
    service: service.name,
    displayName: service.displayName,
    source,
    contentHash: meta?.contentHash ?? null,
    fetchedAt: meta ? new Date(meta.fetchedAt).toISOString() : null,
    ...(protocol ? { protocol } : {}),
  };
  const changed = tools.filter((t) => t.pin === "quarantined" || t.pin === "rejected").map((t) => t.name);
  const quarantine = changed.length
    ? `Quarantined (calls are refused): ${changed.join(", ")}. Their vendor now serves a different definition than the one accepted; shown here is the accepted one, until an admin reviews the change.`
    : undefined;
  const fresh = tools.filter((t) => t.unreviewed).map((t) => t.name);
  const unreviewed = fresh.length
    ? service.entry.trustNewTools
      ? `New, not reviewed by an admin: ${fresh.join(", ")}. This service trusts new tools: they run only on the caller's own account until an admin accepts them.`
      : `Not reviewed (calls are refused until an admin accepts them): ${fresh.join(", ")}. Their vendor started listing them after this service's tools were pinned; only their names are shown.`
    : undefined;
  const fetchNote = meta
    ? undefined
    : "The vendor's tool list has not been fetched yet (it is learnt when a connection to this service first starts, or when you ask for one tool with your own or the shared connection); tools listed here come from the registry.";
  const spoken = era ? `Its vendor speaks ${eraText(era)}.` : undefined;
  const note = [quarantine, unreviewed, fetchNote, spoken].filter((x) => x !== undefined).join(" ") || undefined;
  if (opts.tool) {
    const t = tools.find((x) => x.name === opts.tool);
    if (!t) return { notFound: opts.tool };
    return { ...head, tools: [t], ...(note ? { note } : {}) };
  }
  const compact = tools.map(({ inputSchema: _schema, ...rest }) => rest);
  return { ...head, tools: opts.query ? rankTools(compact, opts.query) : compact, ...(note ? { note } : {}) };
}

/**
 * A cached tool as its pin says. Its own text is shown only when its hash is the pinned one (or,
 * for a new tool of a service that trusts new tools, the one waiting). A quarantined or rejected
 * tool, and one whose pin moved on since it was cached, is shown with its accepted definition; a new
 * (or never recorded) one by name only: changed or unreviewed text, possibly a poisoned
 * description, never reaches the model before an admin accepts it.
 */
function shown(
  t: CachedTool,
  cls: DescribedTool["class"],
  pin: ToolPin | undefined,
  trustNewTools: boolean,
): DescribedTool {
  const hash = definitionHash(definitionOf(t));
  const own: DescribedTool = {
    name: t.name,
    description: t.description ?? "",
    class: cls,
    ...(t.inputSchema ? { inputSchema: t.inputSchema } : {}),
  };
  const failClosed = { access: FAIL_CLOSED_CLASS.access, write: FAIL_CLOSED_CLASS.write, classified: false };
  if (!pin) return { name: t.name, description: "", class: failClosed, unreviewed: true };
  const status = pin.status;
  if (status === "new") {
    if (trustNewTools && hash === pin.pendingHash) return { ...own, class: failClosed, pin: status, unreviewed: true };
    return { name: t.name, description: "", class: failClosed, pin: status, unreviewed: true };
  }
  if (status === "pinned" && hash === pin.pinnedHash) return { ...own, pin: status };
  const accepted = acceptedDefinition(pin.pinnedDefinition);
  return {
    name: t.name,
    description: accepted.description,
    class: cls,
    ...(accepted.inputSchema ? { inputSchema: accepted.inputSchema } : {}),
    pin: status,
  };
}

const acceptedShape = z
  .object({ description: z.string().optional(), inputSchema: z.record(z.string(), z.unknown()).optional() })
  .loose();

/** The accepted definition's description and schema; a definition cut for size yields none. */
function acceptedDefinition(text: string | null): { description: string; inputSchema?: Record<string, unknown> } {
  let doc: unknown;
  try {
    doc = text === null ? undefined : JSON.parse(text);
  } catch {
    doc = undefined;
  }
  const p = acceptedShape.safeParse(doc);
  if (!p.success) return { description: "" };
  return { description: p.data.description ?? "", ...(p.data.inputSchema ? { inputSchema: p.data.inputSchema } : {}) };
}
