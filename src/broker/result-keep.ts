import type { CallToolResult } from "@modelcontextprotocol/client";
import type { KeptResult, ResultStore } from "../results/result-store.js";
import type { CallPlan } from "./call-plan.js";
import type { CleanResult } from "./result-hygiene.js";

// The result-store stage, after hygiene: a truncated result's full redacted text is kept for the
// caller in this thread, and the answer gains a note and an MCP `resource_link` to read it by.

/** How the answer names a kept result (mcp_call's structuredContent `fullResult`). */
export interface FullResultLink {
  readonly uri: string;
  readonly bytes: number;
  readonly pages: number;
  /** ISO time after which the result is gone. */
  readonly expiresAt: string;
}

/** The answer's result, with a link when the full text was kept; untruncated results pass through. */
export async function keepFullResult(
  results: ResultStore,
  plan: CallPlan & { readonly caller: string },
  clean: CleanResult,
): Promise<{ readonly result: CallToolResult; readonly link?: FullResultLink }> {
  if (!clean.truncated || clean.full === undefined) return { result: clean.result };
  const kept = await results.keep({
    callId: plan.callId,
    thread: plan.thread,
    ownerUserId: plan.caller,
    service: plan.serviceName,
    tool: plan.tool,
    text: clean.full(),
  });
  if (kept.kind !== "kept") return { result: clean.result };
  return {
    result: { ...clean.result, content: [...clean.result.content, ...linkContent(kept, plan, results.settings.ttlMs)] },
    link: { uri: kept.uri, bytes: kept.bytes, pages: kept.pages, expiresAt: new Date(kept.expiresAt).toISOString() },
  };
}

/** The note saying how to read on, and the resource_link itself. */
function linkContent(kept: KeptResult, plan: CallPlan, ttlMs: number): CallToolResult["content"] {
  const minutes = Math.max(1, Math.round(ttlMs / 60_000));
  const next =
    kept.pages > 1
      ? ` Page 1 is shown above; read pages 2 to ${kept.pages} with resources/read on ${kept.uri}?page=2, ?page=3 and so on.`
      : "";
  return [
    {
      type: "text",
      text: `[slaude-connect: the full result (${kept.bytes} bytes, ${kept.pages} page(s)) is kept for you in this thread for ${minutes} minute(s): ${kept.uri}.${next}]`,
    },
    {
      type: "resource_link",
      uri: kept.uri,
      name: `${plan.serviceName}.${plan.tool} result`,
      description: `The full result of ${plan.serviceName}.${plan.tool}: ${kept.pages} page(s); add ?page=N to read page N.`,
      mimeType: "text/plain",
      size: kept.bytes,
    },
  ];
}
