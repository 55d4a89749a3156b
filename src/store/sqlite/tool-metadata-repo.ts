import type { ToolMetadata } from "../records.js";
import type { ToolMetadataRepo } from "../store.js";
import { type ToolMetadataRow, toToolMetadata } from "../tool-metadata-row.js";
import { type Db, DEFAULT_LOCK_WAIT, type LockWait, writeTx } from "./db.js";

/** SQLite tool metadata cache; the JSON read back is validated like any other edge. */
export class SqliteToolMetadataRepo implements ToolMetadataRepo {
  constructor(
    private readonly db: Db,
    private readonly wait: LockWait = DEFAULT_LOCK_WAIT,
  ) {}
  async get(teamId: string, service: string): Promise<ToolMetadata | undefined> {
    const r = this.db.prepare("SELECT * FROM tool_metadata WHERE team_id = ? AND service = ?").get(teamId, service) as
      | ToolMetadataRow
      | undefined;
    return r && toToolMetadata(r);
  }
  async put(m: ToolMetadata): Promise<void> {
    const upsert =
      this.db.prepare(`INSERT INTO tool_metadata (team_id, service, content_hash, tools_json, fetched_at) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (team_id, service) DO UPDATE SET content_hash = excluded.content_hash, tools_json = excluded.tools_json, fetched_at = excluded.fetched_at`);
    await writeTx(
      this.db,
      () => upsert.run(m.teamId, m.service, m.contentHash, JSON.stringify(m.tools), m.fetchedAt),
      this.wait,
    );
  }
}
