import type { Client } from "@modelcontextprotocol/client";
import { CallToolResultSchema } from "@modelcontextprotocol/core";
import type { Service } from "../config/registry.js";
import { Redactor } from "../hygiene/redact.js";
import type { PlannedPin } from "../pinning/policy.js";
import { type CallDecision, resolveCall } from "../policy/resolve.js";
import { isStoreUnavailable } from "../store/errors.js";
import type { CallOutcome } from "./answer.js";
import { askOwner } from "./approval-step.js";
import { admit, rateStage } from "./call-admission.js";
import { aheadFits } from "./call-facts.js";
import { type CallPlan, eventBase, type McpCallInput, planCall } from "./call-plan.js";
import { denyCall, failed, refuseCall } from "./call-refusal.js";
import { ownerInFacts, type Runnable, type RunOrder, startRun } from "./call-start.js";
import { CallTrace, reportCall } from "./call-trace.js";
import { CompletionBacklog } from "./completion-backlog.js";
import { CredentialSessions } from "./credential-session.js";
import { credentialStage } from "./credential-stage.js";
import type { BrokerDeps, CallExtra, CallerContext } from "./deps.js";
import { cleanResult } from "./result-hygiene.js";
import { keepFullResult } from "./result-keep.js";
import { UnprovedAttempt } from "./tool-request.js";
import { type NamedFailure, runOnVendor, vendorFailure } from "./vendor-run.js";
import { warmMetadata } from "./warm-metadata.js";

/** The extras of a call's stages: its trace, and (a call made from remembered rows) its deferred call.started. */
type RunExtra = CallExtra & { readonly trace: CallTrace; readonly announce?: () => void };

// One mcp_call, read top to bottom: plan → facts (pins included) → policy → approval → credential
// session → pool lease (pin check on the leased vendor) → result hygiene → audit. Each stage runs once and lives in its own module; this file only
// sequences them. The MCP shape of the outcome is made in answer.ts.

export type { CallOutcome, RanVia } from "./answer.js";
export type { McpCallInput } from "./call-plan.js";

/** Runs mcp_call: identity, membership, policy, approval, the vendor call, hygiene and audit. */
export class CallService {
  /** The credential stage's sessions and their bounded plaintext cache. */
  readonly sessions: CredentialSessions;
  /** Completion rows waiting for an unavailable database (bounded); full, it refuses new calls. */
  readonly completions: CompletionBacklog;

  constructor(private readonly d: BrokerDeps) {
    this.sessions = new CredentialSessions(d);
    this.completions =
      d.completions ?? new CompletionBacklog({ repo: d.store.audit, log: d.log, clock: d.clock, metrics: d.metrics });
  }

  /** Runs one call under its call id: its audit rows and every log line it writes carry that id. */
  async call(ctx: CallerContext, input: McpCallInput, extra: CallExtra = {}): Promise<CallOutcome> {
    const trace = extra.trace ?? new CallTrace(extra.log ?? this.d.log);
    const plan = planCall(this.d.registry, ctx, input, trace.callId);
    const started = { type: "call.started", ...eventBase(plan, this.d.clock.now()) } as const;
    // A call made from remembered rows is announced only once they are proved (its start committed).
    const remembered = extra.ahead?.proofs !== undefined;
    if (!remembered) this.d.events.emit(started);
    let outcome: CallOutcome | undefined;
    let unproved = false;
    try {
      outcome = await this.decide(plan, {
        ...extra,
        trace,
        // Proved: announced, and the endpoint may stream its answer (progress included) from now on.
        ...(remembered
          ? {
              announce: () => {
                this.d.events.emit(started);
                extra.ahead?.attempt?.settle?.("answered");
              },
            }
          : {}),
      });
      return outcome;
    } catch (err) {
      // Nothing was done: no row, no token, no event; the endpoint handles the request again.
      if (err instanceof UnprovedAttempt) {
        unproved = true;
        if (extra.ahead?.attempt) extra.ahead.attempt.unproved = true;
        throw err;
      }
      // The database went away before the vendor ran (every stage after it names its own outcome).
      if (!isStoreUnavailable(err)) throw err;
      trace.log.warn("call refused: the database is unavailable", { error: err.message });
      outcome = failed("store_unavailable");
      return outcome;
    } finally {
      // A stage that threw is answered internal_error by the MCP server: its call ends so too.
      if (!unproved) reportCall(this.d, plan, outcome ?? failed("internal_error"), trace);
      extra.ahead?.attempt?.settle?.(unproved ? "unproved" : "answered");
    }
  }

  /** Facts → policy → (approval) → run: this method only gathers facts and acts on the decision. */
  private async decide(plan: CallPlan, extra: RunExtra): Promise<CallOutcome> {
    const d = { ...this.d, log: extra.trace.log };
    const remembered = extra.ahead?.proofs !== undefined;
    // Remembered facts serve only the very call they were read for, on its warm path: anything else is read afresh.
    if (remembered && !(extra.ahead && aheadFits(extra.ahead, plan))) throw new UnprovedAttempt();
    // Not even a rate check before that path is chosen: the fresh attempt would take its tokens a second time.
    const gate = d.callRate;
    if (remembered && (!gate?.appendsWithTake || !plan.caller || gate.refusedRecently(plan.thread.teamId, plan.caller)))
      throw new UnprovedAttempt();
    const admission = await admit(d, plan, extra.ahead);
    if (remembered && !("facts" in admission && admission.rate === "pending")) throw new UnprovedAttempt();
    if ("limited" in admission) return admission.limited;
    const { facts } = admission;
    const decision = resolveCall(facts);
    if (remembered && !(decision.kind === "run" && decision.via === "own")) throw new UnprovedAttempt();
    // A call that runs now takes its rate with its started row; any other outcome checks it first.
    const chargeWithStart = admission.rate === "pending" && decision.kind === "run";
    if (admission.rate === "pending" && !chargeWithStart) {
      const limited = await rateStage(d, plan);
      if (limited) return limited;
    }
    // Which class rule the pin facts applied: the run stage checks it again on the leased vendor.
    const planned: PlannedPin = facts.pin.kind === "run" ? facts.pin.planned : "pinned";
    switch (decision.kind) {
      case "refuse":
        return refuseCall(this.d, plan, extra.trace, decision);
      case "needs_connect":
        return denyCall(this.d, plan, extra.trace, "needs_connect");
      case "run":
        return this.run(
          plan as Runnable,
          {
            connectionId: decision.connectionId,
            ownerUserId: ownerInFacts(facts, decision.connectionId),
            via: decision.via,
            planned,
            chargeWithStart,
            ...(facts.pinRead ? { pinRead: facts.pinRead } : {}),
          },
          extra,
        );
      case "ask_owner":
        return this.viaOwner(plan as Runnable, decision, planned, extra);
    }
  }

  /** The approval stage: ask the owner, then run only the exact call that was approved. */
  private async viaOwner(
    plan: Runnable,
    decision: Extract<CallDecision, { kind: "ask_owner" }>,
    planned: PlannedPin,
    extra: CallExtra & { trace: CallTrace },
  ): Promise<CallOutcome> {
    const owner = decision.ownerUserId;
    const row = await this.d.store.connections.get(decision.connectionId);
    const redactor = row ? this.sessions.redactorFor(row, plan.service) : new Redactor([]);
    const outcome = await askOwner(
      this.d,
      { plan, connectionId: decision.connectionId, ownerUserId: owner, reason: decision.reason, redactor },
      extra,
    );
    // The approval's own audit rows (requested, decided/expired) already record the refusals below.
    switch (outcome.kind) {
      case "denied":
      case "expired":
      case "cancelled":
      case "interrupted":
        return failed(`approval_${outcome.kind}`, { ownerUserId: owner });
      case "unavailable":
        return denyCall(
          this.d,
          plan,
          extra.trace,
          "approval_unavailable",
          { ownerUserId: owner },
          { ownerUserId: owner, connectionId: decision.connectionId },
        );
      case "allowed_once":
      case "allowed_thread":
        // Forward only what was approved: the approval's hash must equal this call's, consumed once.
        if (
          outcome.approval.argsHash !== plan.argsHash ||
          !(await this.d.approvals.consume(outcome.approval, plan.argsHash))
        ) {
          return denyCall(this.d, plan, extra.trace, "approval_mismatch", { ownerUserId: owner });
        }
        return this.run(
          plan,
          {
            connectionId: decision.connectionId,
            ownerUserId: owner,
            via: outcome.kind === "allowed_once" ? "approval_once" : "approval_thread",
            approver: owner,
            planned,
          },
          extra,
        );
    }
  }

  /** Credential session → write-ahead audit → pool lease → result hygiene → completion audit. */
  private async run(plan: Runnable, order: RunOrder, extra: RunExtra): Promise<CallOutcome> {
    extra.trace.via = order.via;
    // The stages below log through the call's logger: their lines carry its callId and requestId.
    const d: BrokerDeps = { ...this.d, log: extra.trace.log };
    // Fail closed: with the backlog full, the completion of this call could not be kept.
    if (this.completions.full) {
      if (extra.ahead?.proofs) throw new UnprovedAttempt();
      d.log.error("call refused: the completion backlog is full (the database has been unavailable)", {
        backlog: this.completions.size,
      });
      return failed("store_unavailable");
    }
    // The chosen row (with its sealed secret) read again, so a revoke since the decision wins, while
    // the write-ahead row commits and the pin is read: nothing reaches the vendor before all three are in.
    const ahead = extra.ahead && aheadFits(extra.ahead, plan) ? extra.ahead : undefined;
    const start = await startRun(d, this.completions, plan, order, extra.trace, ahead?.proofs);
    if ("limited" in start) return start.limited;
    const { conn, audit, started, pinRead } = start;
    if (started !== "ok") return failed(started);
    extra.announce?.();
    // Started on the own row its facts ahead named: the endpoint may remember them for the next call.
    if (ahead?.attempt && order.via === "own" && order.connectionId === conn?.id && !ahead.attempt.ran) {
      ahead.attempt.ran = true;
      ahead.attempt.onRan?.();
    }
    const fail = async (f: NamedFailure): Promise<CallOutcome> => {
      await audit.completed({ errorCode: f.code });
      return failed(f.code, f.facts);
    };
    if (conn?.status !== "active" || conn.expiresAt <= this.d.clock.now()) return fail({ code: "connection_unusable" });
    const session = await credentialStage(d, this.sessions, conn, plan.service);
    if ("code" in session) return fail(session);
    const pinScope = { teamId: conn.teamId, service: plan.service.name };
    const vendorRun = {
      plan,
      lease: this.sessions.lease(session, plan.service),
      extra,
      verify: (client: Client) =>
        this.d.pins.verify(
          client,
          pinScope,
          {
            tool: plan.tool,
            planned: order.planned,
            ownConnection: order.via === "own",
            trustNewTools: plan.service.entry.trustNewTools,
          },
          pinRead,
        ),
    };
    try {
      const raw = await runOnVendor(this.d, vendorRun);
      const clean = cleanResult(raw, vendorRun.lease.redactor, this.d.limits);
      const { result, truncated, bytes } = clean;
      // Success is recorded only for a result the client can parse: anything else is the vendor's failure.
      // The SDK client validated what the vendor sent; only what redaction or the cut changed is checked again.
      if (!clean.asReceived && !CallToolResultSchema.safeParse(result).success)
        return fail({ code: "vendor_error", facts: { detail: "its result could not be delivered intact" } });
      const recorded = await audit.completed(
        { resultBytes: bytes, ...(result.isError ? { errorCode: "vendor_tool_error" } : {}) },
        extra.signal,
      );
      // No result without its completion row while the database is away: it is written once the database is back.
      if (recorded === "pending" || recorded === "dropped") return failed("store_unavailable", { ran: true });
      // A truncated result's full text is kept for this caller and thread; the answer links to it.
      const kept: Awaited<ReturnType<typeof keepFullResult>> = await keepFullResult(this.d.results, plan, clean).catch(
        (err: unknown) => {
          if (!isStoreUnavailable(err)) throw err;
          d.log.warn("full result not kept: the database is unavailable", { error: err.message });
          return { result: clean.result };
        },
      );
      return {
        kind: "ok",
        via: order.via,
        connectionId: conn.id,
        ownerUserId: conn.ownerUserId,
        result: kept.result,
        truncated,
        ...(kept.link ? { fullResult: kept.link } : {}),
      };
    } catch (err) {
      return fail(await vendorFailure(d, vendorRun, err));
    }
  }

  /** Starts the vendor of the caller's own (else the shared) connection so its tool list is cached; runs no tool. */
  warmMetadata(ctx: CallerContext, caller: string, service: Service): Promise<boolean> {
    return warmMetadata(this.d, this.sessions, ctx, caller, service);
  }

  /** Drops the decrypted credential of an ended connection from memory. */
  forget(connectionId: string): void {
    this.sessions.forget(connectionId);
  }
}
