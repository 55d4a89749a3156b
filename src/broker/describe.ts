import { createHash } from "node:crypto";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { z } from "zod";
import type { Service, ToolClass } from "../config/registry.js";
import type { Redactor } from "../hygiene/redact.js";
import { canonicalJson } from "../domain/canonical-json.js";
import { PoolError } from "../pool/errors.js";
import type { BrokerDeps } from "./deps.js";
import { listAllTools } from "./tool-paging.js";
import { stems } from "./word-forms.js";

/** A vendor tool as cached: the parts of tools/list the broker keeps. */
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
}

/** Whose vendor the metadata came from: its team keys the cache, its credential's redactor cleans it. */
export interface MetadataOrigin {
  readonly teamId: string;
  readonly redactor: Redactor;
}

/** Stores a service's tools/list in the team's metadata cache, redacted, with its content hash. */
export async function refreshMetadata(deps: Pick<BrokerDeps, "store" | "clock" | "log">, service: Service, client: Client, origin: MetadataOrigin): Promise<void> {
  try {
    const tools: CachedTool[] = [];
    // Paged within fixed limits (src/broker/tool-paging.ts): an endless pager is stopped, not cached.
    for (const t of await listAllTools(client)) tools.push({ name: t.name, ...(t.description ? { description: t.description } : {}), inputSchema: t.inputSchema as Record<string, unknown>, ...(t.annotations ? { annotations: t.annotations as Record<string, unknown> } : {}) });
    // Redacted before it is hashed or stored: a vendor may put its credential in any metadata text.
    const clean = tools.map((t) => origin.redactor.deep(t)).sort((a, b) => (a.name < b.name ? -1 : 1));
    const contentHash = createHash("sha256").update(canonicalJson(clean)).digest("hex");
    const prev = await deps.store.toolMetadata.get(origin.teamId, service.name);
    if (prev?.contentHash === contentHash) return;
    await deps.store.toolMetadata.put({ teamId: origin.teamId, service: service.name, contentHash, tools: clean, fetchedAt: deps.clock.now() });
  } catch (err) {
    // A vendor over the paging limits is stopped by the pool (the error fails its calls).
    if (err instanceof PoolError && err.code === "vendor_misbehaved") throw err;
    // Only the error's kind: vendor text may carry the credential.
    deps.log.warn("tools/list refresh failed", { service: service.name, error: (err as Error).name, code: String((err as { code?: unknown }).code ?? "") });
  }
}

/** Ranks tools lexically: name matches outweigh description matches; ties by name. */
export function rankTools<T extends { name: string; description: string }>(tools: readonly T[], query: string, limit = 20): T[] {
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
export async function describeService(deps: Pick<BrokerDeps, "store">, service: Service, opts: { teamId: string; tool?: string; query?: string }): Promise<DescribeResult | { notFound: string }> {
  const meta = await deps.store.toolMetadata.get(opts.teamId, service.name);
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
      return [{ name: p.data.name, description: p.data.description ?? "", class: classOf(p.data.name), ...(p.data.inputSchema ? { inputSchema: p.data.inputSchema } : {}) }];
    });
  } else {
    source = "registry";
    tools = Object.keys(service.entry.tools)
      .sort()
      .map((name) => ({ name, description: "", class: classOf(name) }));
  }
  const head = {
    service: service.name,
    displayName: service.displayName,
    source,
    contentHash: meta?.contentHash ?? null,
    fetchedAt: meta ? new Date(meta.fetchedAt).toISOString() : null,
  };
  const note = meta ? undefined : "The vendor's tool list has not been fetched yet (it is learnt when a connection to this service first starts, or when you ask for one tool with your own or the shared connection); tools listed here come from the registry.";
  if (opts.tool) {
    const t = tools.find((x) => x.name === opts.tool);
    if (!t) return { notFound: opts.tool };
    return { ...head, tools: [t], ...(note ? { note } : {}) };
  }
  const compact = tools.map(({ inputSchema: _schema, ...rest }) => rest);
  return { ...head, tools: opts.query ? rankTools(compact, opts.query) : compact, ...(note ? { note } : {}) };
}
