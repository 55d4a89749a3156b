import { z } from "zod";
import type { ToolPin } from "../records.js";

// The tool_pins rows as both adapters read them, and their strict mapping.

/** A row read back is parsed like any other edge: an unknown status is an error, not a guess. */
const pinRow = z
  .object({
    team_id: z.string(),
    service: z.string(),
    tool: z.string(),
    status: z.enum(["pinned", "quarantined", "new", "rejected"]),
    pinned_hash: z.string().nullable(),
    pinned_definition: z.string().nullable(),
    pending_hash: z.string().nullable(),
    pending_definition: z.string().nullable(),
    first_seen_at: z.number(),
    changed_at: z.number(),
    decided_at: z.number().nullable(),
    decided_by: z.string().nullable(),
  })
  .strict();

/** Maps a row (validated) to a pin; as both adapters read it. */
export function toPin(raw: unknown): ToolPin {
  const r = pinRow.parse(raw);
  return {
    teamId: r.team_id,
    service: r.service,
    tool: r.tool,
    status: r.status,
    pinnedHash: r.pinned_hash,
    pinnedDefinition: r.pinned_definition,
    pendingHash: r.pending_hash,
    pendingDefinition: r.pending_definition,
    firstSeenAt: r.first_seen_at,
    changedAt: r.changed_at,
    decidedAt: r.decided_at,
    decidedBy: r.decided_by,
  };
}
