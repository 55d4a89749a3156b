import { parseArgs } from "node:util";
import type { AuditEventKind, AuditQuery } from "../../audit/event.js";
import { parseDurationMs } from "../../config/duration.js";
import { CliContext, UsageError } from "../context.js";
import { formatTable, formatTime } from "../format.js";

export const AUDIT_HELP = `slaude-connect audit [--since T] [--until T] [--user U] [--team T] [--service S]
                     [--connection ID] [--event KIND] [--call ID] [--limit N] [--jsonl]

  T is an ISO time (2026-11-30T10:00:00Z) or a duration back from now (30m, 8h, 7d).
  --call shows one mcp_call's rows: its call_started row (written before the vendor ran) and its
  completion row; a started call without a completion row is one whose outcome was not recorded.
  --jsonl exports one JSON object per line (all matching rows unless --limit is given).`;

function parseTime(v: string, now: number, flag: string): number {
  const back = parseDurationMs(v);
  if (back !== undefined && /[smhd]$/.test(v)) return now - back;
  const t = Date.parse(v);
  if (Number.isNaN(t)) throw new UsageError(`${flag}: expected an ISO time or a duration like 8h, got ${JSON.stringify(v)}`);
  return t;
}

/** `audit`: query or export the audit log. */
export async function auditCommand(ctx: CliContext, argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      since: { type: "string" },
      until: { type: "string" },
      user: { type: "string" },
      team: { type: "string" },
      service: { type: "string" },
      connection: { type: "string" },
      event: { type: "string" },
      call: { type: "string" },
      limit: { type: "string" },
      jsonl: { type: "boolean" },
    },
    strict: true,
  });
  const now = ctx.clock.now();
  const limit = values.limit === undefined ? undefined : Number(values.limit);
  if (limit !== undefined && (!Number.isInteger(limit) || limit <= 0)) throw new UsageError("--limit: expected a positive integer");
  const q: AuditQuery = {
    ...(values.since ? { since: parseTime(values.since, now, "--since") } : {}),
    ...(values.until ? { until: parseTime(values.until, now, "--until") } : {}),
    ...(values.user ? { userId: values.user } : {}),
    ...(values.team ? { teamId: values.team } : {}),
    ...(values.service ? { service: values.service } : {}),
    ...(values.connection ? { connectionId: values.connection } : {}),
    ...(values.event ? { event: values.event as AuditEventKind } : {}),
    ...(values.call ? { callId: values.call } : {}),
    limit: limit ?? (values.jsonl ? Number.MAX_SAFE_INTEGER : 200),
    // The table shows the most recent rows; an export runs from the oldest.
    take: values.jsonl ? "earliest" : "latest",
  };
  const rows = await ctx.store.audit.query(q);
  if (values.jsonl) {
    for (const r of rows) ctx.out(JSON.stringify({ ...r, time: new Date(r.at).toISOString() }));
    return 0;
  }
  ctx.out(
    formatTable(
      ["SEQ", "TIME", "EVENT", "DECISION", "CALLER", "OWNER", "SERVICE", "TOOL", "CONNECTION", "ERROR"],
      rows.map((r) => [String(r.seq), formatTime(r.at), r.event, r.decision ?? "", r.callerUserId ?? "", r.ownerUserId ?? "", r.service ?? "", r.tool ?? "", r.connectionId ?? "", r.errorCode ?? ""]),
    ),
  );
  return 0;
}
