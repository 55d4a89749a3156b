import type { CallToolResult as VendorResult } from "@modelcontextprotocol/client";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { type FailureCode, failureMessage, type MessageFacts, retryAfterSeconds } from "./outcome.js";
import type { FullResultLink } from "./result-keep.js";

// The one place a broker tool's answer takes its MCP shape: refusals (text + structured code and
// message), plain answers, and mcp_call's result with the note saying whose account ran it.

/** How a call ran, reported in structuredContent. */
export type RanVia = "own" | "grant" | "shared" | "approval_once" | "approval_thread";

/** The broker's answer to mcp_call, before it is shaped into an MCP result. */
export type CallOutcome =
  | {
      readonly kind: "ok";
      readonly via: RanVia;
      readonly connectionId: string;
      readonly ownerUserId: string | null;
      readonly result: VendorResult;
      readonly truncated: boolean;
      readonly fullResult?: FullResultLink;
    }
  | { readonly kind: "failed"; readonly code: FailureCode; readonly facts: MessageFacts };

/** A refusal: the code's one sentence (outcome.ts) as text and in structuredContent. */
export function refusal(code: FailureCode, facts: MessageFacts = {}): CallToolResult {
  const message = failureMessage(code, facts);
  // A refusal that names a retry time carries it structured too, so a host can wait without parsing text.
  const after = facts.retryAfterSeconds ?? retryAfterSeconds(code);
  const retry = {
    ...(facts.retryAt !== undefined ? { retryAt: new Date(facts.retryAt).toISOString() } : {}),
    ...(after !== undefined ? { retryAfterSeconds: after } : {}),
  };
  return {
    content: [{ type: "text", text: message }],
    structuredContent: { status: code === "needs_connect" ? "needs_connect" : "refused", code, message, ...retry },
    isError: true,
  };
}

/** A plain answer with its structured twin. */
export function answer(text: string, structured: Record<string, unknown>, status = "ok"): CallToolResult {
  return { content: [{ type: "text", text }], structuredContent: { status, ...structured } };
}

/** mcp_call's MCP result: the vendor's (clean) content plus a note when it ran on another account. */
export function callAnswer(input: { service: string; tool: string }, out: CallOutcome): CallToolResult {
  if (out.kind === "failed") return refusal(out.code, { service: input.service, tool: input.tool, ...out.facts });
  const note =
    out.via === "shared"
      ? `[Ran with the shared ${input.service} identity, not the user's own account.]`
      : out.via === "grant" || out.via.startsWith("approval")
        ? `[Ran on <@${out.ownerUserId}>'s ${input.service} account${out.via === "grant" ? " under their thread grant" : " with their approval"}.]`
        : undefined;
  return {
    content: [...out.result.content, ...(note ? [{ type: "text" as const, text: note }] : [])],
    structuredContent: {
      status: "ok",
      service: input.service,
      tool: input.tool,
      ranAs: out.via,
      connectionOwner: out.ownerUserId,
      truncated: out.truncated,
      ...(out.fullResult ? { fullResult: out.fullResult } : {}),
      vendorIsError: out.result.isError === true,
      ...(out.result.structuredContent ? { result: out.result.structuredContent } : {}),
    },
    ...(out.result.isError ? { isError: true } : {}),
  };
}
