// A cached tool list as both store adapters read it back: same columns in SQLite and PostgreSQL,
// one mapping (the JSON is checked like any other edge).
import { z } from "zod";
import type { ToolMetadata } from "./records.js";

export interface ToolMetadataRow {
  readonly team_id: string;
  readonly service: string;
  readonly content_hash: string;
  readonly tools_json: string;
  readonly fetched_at: number;
}

const toolsJson = z.array(z.unknown());

/** A cached tool list read back; undefined when its JSON is not a list (an edge like any other: a miss, never a guess). */
export function toToolMetadata(r: ToolMetadataRow): ToolMetadata | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(r.tools_json);
  } catch {
    return undefined;
  }
  const parsed = toolsJson.safeParse(doc);
  if (!parsed.success) return undefined;
  return {
    teamId: r.team_id,
    service: r.service,
    contentHash: r.content_hash,
    tools: parsed.data,
    fetchedAt: r.fetched_at,
  };
}
