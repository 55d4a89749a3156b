import type { AuditEvent } from "../audit/event.js";
import { FAIL_CLOSED_CLASS, type Service, type ServiceRegistry, type ToolClass } from "../config/registry.js";
import type { ThreadRef } from "../domain/thread.js";
import type { CallEventBase } from "../events/call-event.js";
import { callHash } from "../policy/args-hash.js";
import type { CallerContext } from "./deps.js";

/** A validated mcp_call request. */
export interface McpCallInput {
  readonly service: string;
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly on_behalf_of: string;
}

/**
 * One mcp_call, fixed before any stage runs and frozen: every later stage (policy, approval, the
 * vendor, audit) reads the same caller, arguments and hash, computed once.
 */
export interface CallPlan {
  readonly callId: string;
  readonly thread: ThreadRef;
  /** The live turn user read when the call arrived; undefined when no turn is known. */
  readonly caller: string | undefined;
  readonly onBehalfOf: string;
  readonly serviceName: string;
  /** Undefined when the registry has no such service (refused by the policy). */
  readonly service: Service | undefined;
  readonly tool: string;
  /** The tool's class; the fail-closed class for an unknown service or tool. */
  readonly toolClass: ToolClass;
  /** A private frozen copy: what the approval (if any) is bound to and what the vendor receives. */
  readonly args: Readonly<Record<string, unknown>>;
  readonly argsHash: string;
}

function deepFreeze<T>(v: T): T {
  if (v && typeof v === "object") {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/** Builds the frozen plan of one call. */
export function planCall(registry: ServiceRegistry, ctx: CallerContext, input: McpCallInput, callId: string): CallPlan {
  const args = deepFreeze(structuredClone(input.args));
  const service = registry.get(input.service);
  return Object.freeze({
    callId,
    thread: ctx.thread,
    caller: ctx.userId,
    onBehalfOf: input.on_behalf_of,
    serviceName: input.service,
    service,
    tool: input.tool,
    toolClass: service ? service.classOf(input.tool) : FAIL_CLOSED_CLASS,
    args,
    argsHash: callHash(input.service, input.tool, args),
  });
}

/** The audit fields every row of this call carries. */
export function auditBase(plan: CallPlan): Omit<AuditEvent, "at" | "event"> {
  return {
    teamId: plan.thread.teamId,
    channelId: plan.thread.channelId,
    threadTs: plan.thread.threadTs,
    callerUserId: plan.caller ?? null,
    service: plan.serviceName,
    tool: plan.tool,
    argsHash: plan.argsHash,
    callId: plan.callId,
  };
}

/** The fields every call event of this call carries (src/events), stamped `at`. */
export function eventBase(plan: CallPlan, at: number): CallEventBase {
  return {
    callId: plan.callId,
    at,
    teamId: plan.thread.teamId,
    channelId: plan.thread.channelId,
    threadTs: plan.thread.threadTs,
    callerUserId: plan.caller ?? null,
    service: plan.serviceName,
    tool: plan.tool,
  };
}
