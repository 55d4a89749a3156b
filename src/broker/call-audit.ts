import type { AuditEvent } from "../audit/event.js";
import { errorMessage } from "../domain/errors.js";
import { newCallId } from "../domain/ids.js";
import type { Logger } from "../log/logger.js";
import type { Metrics } from "../metrics/metrics.js";
import { isStoreUnavailable } from "../store/errors.js";
import type { AuditRepo } from "../store/store.js";
import type { CompletionBacklog, CompletionWrite } from "./completion-backlog.js";

// Write-ahead audit of one vendor call (issue 9, item 9). The `call_started` row is committed
// before anything reaches the vendor: if it cannot be written the call does not run, so a model
// that retries never causes an unrecorded second write. Once the vendor has run, the completion
// row goes through the completion backlog: when the database is away (issue 21, item 9) it is
// retried until written and the call answers ok only once it is; any other failure to write it
// (a held SQLite lock, a full disk) is logged and the outcome still returned.

/** Appends audit rows, logging (ids and codes only) and counting instead of throwing; true if written. */
export async function appendOrLog(
  repo: AuditRepo,
  log: Logger,
  events: readonly AuditEvent[],
  metrics?: Pick<Metrics, "auditWriteFailed">,
): Promise<boolean> {
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
      error: errorMessage(err),
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
    private readonly completions: CompletionBacklog,
    opts: { callId?: string | undefined; metrics?: Pick<Metrics, "auditWriteFailed"> | undefined } = {},
  ) {
    this.callId = opts.callId ?? newCallId();
    this.metrics = opts.metrics;
  }

  private readonly metrics: Pick<Metrics, "auditWriteFailed"> | undefined;

  /**
   * Commits the `call_started` row; otherwise (logged) the call must not run: `store_unavailable`
   * when the database is away, `audit_unavailable` for any other failure (a held lock, a full disk).
   * `commit` replaces the repo's append when the row is committed together with a check (the call
   * rate): false is that check's refusal, with no row written (`refused`, not logged here).
   */
  async started(
    commit?: (rows: readonly AuditEvent[]) => Promise<boolean>,
  ): Promise<"ok" | "refused" | "store_unavailable" | "audit_unavailable"> {
    const rows = [{ ...this.row({ durationMs: null }), event: "call_started" as const, callId: this.callId }];
    try {
      if (!commit) await this.repo.append(rows);
      else if (!(await commit(rows))) return "refused";
      return "ok";
    } catch (err) {
      this.metrics?.auditWriteFailed("call_started");
      const r = this.row({});
      this.log.error("call refused: its call_started audit row could not be written", {
        callId: this.callId,
        connectionId: r.connectionId ?? null,
        service: r.service ?? null,
        tool: r.tool ?? null,
        code: (err as { code?: string }).code ?? "error",
        error: errorMessage(err),
      });
      return isStoreUnavailable(err) ? "store_unavailable" : "audit_unavailable";
    }
  }

  /** Writes the completion (`call`) row through the backlog (see CompletionWrite); never throws: the outcome already happened. */
  completed(e: Partial<AuditEvent>, signal?: AbortSignal): Promise<CompletionWrite> {
    return this.completions.write({ ...this.row(e), event: "call", callId: this.callId }, signal, this.log);
  }
}
