import {
  type McpServer,
  ProtocolError,
  type ReadResourceResult,
  ResourceNotFoundError,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { RESULT_URI_TEMPLATE } from "../results/result-uri.js";
import { isMember } from "./call-facts.js";
import type { BrokerDeps, CallerContext } from "./deps.js";

// The `resources` capability, for stored results only: resources/read serves a page of a result
// to its owner in its thread (src/results/read-policy.ts); resources/list lists nothing (results
// are reached by the resource_link of the answer that produced them, never by browsing), and
// resources/templates/list names the one URI template.

/**
 * JSON-RPC code of the one refusal: "Resource not found" is -32602 with `data.uri` (the 2026-07-28
 * spec; SDK v2 answers it so on both eras, where v1 sent -32002).
 */
export const RESOURCE_NOT_FOUND = -32602;

/** A page past the last one, answered only to the result's owner (SDK v2 keeps only a ProtocolError's code). */
class InvalidPage extends ProtocolError {
  constructor(message: string) {
    super(-32602, message);
  }
}

/** The part of a request the caller is resolved from (the HTTP request, for X-Slaude-Turn). */
export type RequestFacts = Pick<ServerContext, "http">;

/** Adds stored-result resources to a session's server; `resolve` is the session's live caller (the same as its tools'). */
export function serveStoredResults(
  server: McpServer,
  d: Pick<BrokerDeps, "results" | "membership" | "log">,
  resolve: (extra: RequestFacts) => Promise<CallerContext | string>,
): void {
  server.server.registerCapabilities({ resources: { listChanged: false } });
  server.server.setRequestHandler("resources/list", () => ({ resources: [] }));
  server.server.setRequestHandler("resources/templates/list", () => ({
    resourceTemplates: [
      {
        uriTemplate: RESULT_URI_TEMPLATE,
        name: "stored-result",
        title: "A truncated tool result, in full",
        description:
          "The whole (redacted) result of one of your mcp_calls that was too big to return inline, as linked from that answer; readable by you, in this thread, until it expires. page=N reads page N.",
        mimeType: "text/plain",
      },
    ],
  }));
  server.server.setRequestHandler("resources/read", async (req, extra): Promise<ReadResourceResult> => {
    const uri = req.params.uri;
    const ctx = await resolve(extra);
    // A session that cannot name its caller reads as nobody: the same not-found as everything else.
    const reader =
      typeof ctx === "string" ? { thread: { teamId: "", channelId: "", threadTs: "" }, userId: undefined } : ctx;
    const member = reader.userId ? await isMember(d, reader.thread, reader.userId) : false;
    const out = await d.results.read(uri, { thread: reader.thread, userId: reader.userId, member });
    switch (out.kind) {
      case "not_found":
        // The one answer to every refused read: no oracle between unknown, expired and someone else's.
        throw new ResourceNotFoundError(uri, "Resource not found");
      case "no_such_page":
        throw new InvalidPage(`This result has ${out.pages} page(s).`);
      case "page":
        return {
          contents: [
            {
              uri: out.uri,
              mimeType: "text/plain",
              text: out.next
                ? `${out.text}\n[slaude-connect: page ${out.page} of ${out.pages}; the next page is ${out.next}]`
                : out.text,
              _meta: {
                "slaude-connect/page": { page: out.page, pages: out.pages, ...(out.next ? { next: out.next } : {}) },
              },
            },
          ],
        };
    }
  });
}
