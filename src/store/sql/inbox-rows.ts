import { z } from "zod";
import { parseCard } from "../../domain/card-schema.js";
import type { ConsentSubject, InboxRecord } from "../records.js";

// The local workspace's inbox rows as both adapters read them, and their strict mapping.

/** A workspace_inbox row (PostgreSQL's also carries `seq`, unread here). */
export interface InboxRow {
  id: string;
  team_id: string;
  user_id: string;
  at: number;
  kind: string;
  card_json: string;
  approval_id: string | null;
  subject_json: string | null;
  state: string;
}

const subjectSchema = z
  .object({ service: z.string(), channelId: z.string().nullable(), threadTs: z.string().nullable() })
  .strict();

function parseSubject(json: string | null): ConsentSubject | null | undefined {
  if (json === null) return null;
  try {
    const r = subjectSchema.safeParse(JSON.parse(json));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

/** A row as an inbox record; undefined when its JSON does not parse (such a row is never shown). */
export function toInbox(r: InboxRow): InboxRecord | undefined {
  const card = parseCard(r.card_json);
  const subject = parseSubject(r.subject_json);
  if (!card || subject === undefined || (r.state !== "open" && r.state !== "settled")) return undefined;
  return {
    id: r.id,
    teamId: r.team_id,
    userId: r.user_id,
    at: r.at,
    card,
    approvalId: r.approval_id,
    subject,
    state: r.state,
  };
}
