import type { AuditEvent } from "../audit/event.js";
import { newId } from "../domain/ids.js";
import type { Logger } from "../log/logger.js";
import type { Metrics } from "../metrics/metrics.js";
import type { AuditRepo } from "../store/store.js";

// Write-ahead audit of one vendor call (issue 9, item 9). The `call_started` row is committed
// before anything reaches the vendor: if it cannot be written the call does not run, so a model
// that retries never causes an unrecorded second write. Once the vendor has run, its outcome is
// returned even if the completion row cannot be written; the log then records that failure.

/** Appends audit rows, logging (ids and codes only) and counting instead of throwing; true if written. */
export async function appendOrLog(repo: AuditRepo, log: Logger, events: readonly AuditEvent[], metrics?: Pick<Metrics, "auditWriteFailed">): Promise<boolean> {
  try {
    await repo.append(events);
    return true;
  } catch (err) {
    const e = events[0];
    metrics?.auditWriteFailed(e?.event ?? "other");
    log.error("audit row not written", {
      event: e?.event,
      callId: e?.callId ?? null,
      connectionId: e?.connectionId ?? null,
      service: e?.service ?? null,
      tool: e?.tool ?? null,
      outcome: e?.errorCode ?? "ok",
      code: (err as { code?: string }).code ?? "error",
      error: (err as Error).message,
    });
    return false;
  }
}

/** The audit rows of one call, paired by its call id (fresh unless given); `row` fills the call's fixed fields. */
export class CallAudit {
  readonly callId: string;

  constructor(
    private readonly repo: AuditRepo,
    private readonly log: Logger,
    private readonly row: (e: Partial<AuditEvent>) => AuditEvent,
    opts: { callId?: string | undefined; metrics?: Pick<Metrics, "auditWriteFailed"> | undefined } = {},
  ) {
    this.callId = opts.callId ?? newId("call");
    this.metrics = opts.metrics;
  }

  private readonly metrics: Pick<Metrics, "auditWriteFailed"> | undefined;

  /** Commits the `call_started` row; false (and logged) if it could not be written: the call must not run. */
  async started(): Promise<boolean> {
    try {
      await this.repo.append([{ ...this.row({ durationMs: null }), event: "call_started", callId: this.callId }]);
      return true;
    } catch (err) {
      this.metrics?.auditWriteFailed("call_started");
      const r = this.row({});
      this.log.error("call refused: its call_started audit row could not be written", {
        callId: this.callId,
        connectionId: r.connectionId ?? null,
        service: r.service ?? null,
        tool: r.tool ?? null,
        code: (err as { code?: string }).code ?? "error",
        error: (err as Error).message,
      });
      return false;
    }
  }

  /** Writes the completion (`call`) row; a failure is logged, never thrown: the outcome already happened. */
  async completed(e: Partial<AuditEvent>): Promise<void> {
    await appendOrLog(this.repo, this.log, [{ ...this.row(e), event: "call", callId: this.callId }], this.metrics);
  }
}
