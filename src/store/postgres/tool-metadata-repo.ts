import type { ToolMetadata } from "../records.js";
import type { ToolMetadataRepo } from "../store.js";
import { type ToolMetadataRow, toToolMetadata } from "../tool-metadata-row.js";
import type { PgDb } from "./pg-db.js";

/** PostgreSQL tool metadata cache; the JSON read back is validated like any other edge. */
export class PgToolMetadataRepo implements ToolMetadataRepo {
  constructor(private readonly db: PgDb) {}
  async get(teamId: string, service: string): Promise<ToolMetadata | undefined> {
    const r = (
      await this.db.query<ToolMetadataRow>("SELECT * FROM tool_metadata WHERE team_id = $1 AND service = $2", [
        teamId,
        service,
      ])
    ).rows[0];
    return r && toToolMetadata(r);
  }
  async put(m: ToolMetadata): Promise<void> {
    await this.db.query(
      `INSERT INTO tool_metadata (team_id, service, content_hash, tools_json, fetched_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (team_id, service) DO UPDATE SET content_hash = excluded.content_hash, tools_json = excluded.tools_json, fetched_at = excluded.fetched_at`,
      [m.teamId, m.service, m.contentHash, JSON.stringify(m.tools), m.fetchedAt],
    );
  }
}
