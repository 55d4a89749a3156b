import { z } from "zod";
import type { ToolMetadata } from "../records.js";
import type { ToolMetadataRepo } from "../store.js";
import type { PgDb } from "./pg-db.js";

const toolsJson = z.array(z.unknown());

/** PostgreSQL tool metadata cache; the JSON read back is validated like any other edge. */
export class PgToolMetadataRepo implements ToolMetadataRepo {
  constructor(private readonly db: PgDb) {}
  async get(teamId: string, service: string): Promise<ToolMetadata | undefined> {
    const r = (
      await this.db.query<{ team_id: string; service: string; content_hash: string; tools_json: string; fetched_at: number }>(
        "SELECT * FROM tool_metadata WHERE team_id = $1 AND service = $2",
        [teamId, service],
      )
    ).rows[0];
    if (!r) return undefined;
    let doc: unknown;
    try {
      doc = JSON.parse(r.tools_json);
    } catch {
      return undefined;
    }
    const parsed = toolsJson.safeParse(doc);
    if (!parsed.success) return undefined;
    return { teamId: r.team_id, service: r.service, contentHash: r.content_hash, tools: parsed.data, fetchedAt: r.fetched_at };
  }
  async put(m: ToolMetadata): Promise<void> {
    await this.db.query(
      `INSERT INTO tool_metadata (team_id, service, content_hash, tools_json, fetched_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (team_id, service) DO UPDATE SET content_hash = excluded.content_hash, tools_json = excluded.tools_json, fetched_at = excluded.fetched_at`,
      [m.teamId, m.service, m.contentHash, JSON.stringify(m.tools), m.fetchedAt],
    );
  }
}
