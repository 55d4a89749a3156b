// The audit rows both store adapters write and read back: the columns and values of an append,
// a row as a record, the columns `callSamples` reads as a sample, and the bound of one such read.
import type { AuditEvent, AuditRecord, CallSample } from "../audit/event.js";

export interface AuditRow {
  seq: number;
  at: number;
  event: string;
  team_id: string | null;
  channel_id: string | null;
  thread_ts: string | null;
  caller_user_id: string | null;
  owner_user_id: string | null;
  connection_id: string | null;
  service: string | null;
  tool: string | null;
  args_hash: string | null;
  decision: string | null;
  approver_user_id: string | null;
  duration_ms: number | null;
  result_bytes: number | null;
  error_code: string | null;
  actor: string | null;
  call_id: string | null;
}

export function toRecord(r: AuditRow): AuditRecord {
  return {
    seq: r.seq,
    at: r.at,
    event: r.event as AuditRecord["event"],
    teamId: r.team_id,
    channelId: r.channel_id,
    threadTs: r.thread_ts,
    callerUserId: r.caller_user_id,
    ownerUserId: r.owner_user_id,
    connectionId: r.connection_id,
    service: r.service,
    tool: r.tool,
    argsHash: r.args_hash,
    decision: r.decision,
    approverUserId: r.approver_user_id,
    durationMs: r.duration_ms,
    resultBytes: r.result_bytes,
    errorCode: r.error_code,
    actor: r.actor,
    callId: r.call_id,
  };
}

/** The columns of an audit row that `callSamples` reads. */
export interface CallSampleRow {
  at: number;
  event: string;
  decision: string | null;
  error_code: string | null;
  duration_ms: number | null;
}

/** A `callSamples` row as a sample; the query only selects `call` and `call_denied` rows. */
export function toCallSample(r: CallSampleRow): CallSample {
  const event = r.event === "call" ? "call" : "call_denied";
  return { at: r.at, event, decision: r.decision, errorCode: r.error_code, durationMs: r.duration_ms };
}

/** Largest `callSamples` limit honoured: the bound of one read, whatever a caller asks. */
export const MAX_CALL_SAMPLES = 100_000;

/** A `callSamples` limit as a whole number in 1..MAX_CALL_SAMPLES. */
export function sampleLimit(limit: number): number {
  return Math.max(1, Math.min(Math.floor(limit) || 1, MAX_CALL_SAMPLES));
}

/** The audit columns an append fills, with their PostgreSQL types, in the order of auditValues. */
export const AUDIT_COLUMNS: readonly (readonly [string, "bigint" | "text"])[] = [
  ["at", "bigint"],
  ["event", "text"],
  ["team_id", "text"],
  ["channel_id", "text"],
  ["thread_ts", "text"],
  ["caller_user_id", "text"],
  ["owner_user_id", "text"],
  ["connection_id", "text"],
  ["service", "text"],
  ["tool", "text"],
  ["args_hash", "text"],
  ["decision", "text"],
  ["approver_user_id", "text"],
  ["duration_ms", "bigint"],
  ["result_bytes", "bigint"],
  ["error_code", "text"],
  ["actor", "text"],
  ["call_id", "text"],
];

/** One event's values in AUDIT_COLUMNS order (absent fields as null): what both databases insert. */
export function auditValues(e: AuditEvent): unknown[] {
  return [
    e.at,
    e.event,
    e.teamId ?? null,
    e.channelId ?? null,
    e.threadTs ?? null,
    e.callerUserId ?? null,
    e.ownerUserId ?? null,
    e.connectionId ?? null,
    e.service ?? null,
    e.tool ?? null,
    e.argsHash ?? null,
    e.decision ?? null,
    e.approverUserId ?? null,
    e.durationMs ?? null,
    e.resultBytes ?? null,
    e.errorCode ?? null,
    e.actor ?? null,
    e.callId ?? null,
  ];
}
