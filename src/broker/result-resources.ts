import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { ListResourcesRequestSchema, ListResourceTemplatesRequestSchema, ReadResourceRequestSchema, type ReadResourceResult } from "@modelcontextprotocol/sdk/types.js";
import { RESULT_URI_TEMPLATE } from "../results/result-uri.js";
import { isMember } from "./call-facts.js";
import type { BrokerDeps, CallerContext } from "./deps.js";

// The `resources` capability, for stored results only: resources/read serves a page of a result
// to its owner in its thread (src/results/read-policy.ts); resources/list lists nothing (results
// are reached by the resource_link of the answer that produced them, never by browsing), and
// resources/templates/list names the one URI template.

/** JSON-RPC code of the one refusal (MCP "Resource not found"). */
export const RESOURCE_NOT_FOUND = -32002;

/** The one answer to every refused read: no oracle between unknown, expired and someone else's. */
class ResourceNotFound extends Error {
  readonly code = RESOURCE_NOT_FOUND;
  constructor(readonly data: { uri: string }) {
    super("Resource not found");
  }
}

/** A page past the last one, answered only to the result's owner. */
class InvalidPage extends Error {
  readonly code = -32602;
}

/** The part of a request the caller is resolved from (the HTTP headers, for X-Slaude-Turn). */
export interface RequestFacts {
  readonly requestInfo?: { readonly headers?: Record<string, string | string[] | undefined> };
}

/** Adds stored-result resources to a session's server; `resolve` is the session's live caller (the same as its tools'). */
export function serveStoredResults(server: McpServer, d: Pick<BrokerDeps, "results" | "membership" | "log">, resolve: (extra: RequestFacts) => Promise<CallerContext | string>): void {
  server.server.registerCapabilities({ resources: { listChanged: false } });
  server.server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: [] }));
  server.server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: [
      {
        uriTemplate: RESULT_URI_TEMPLATE,
        name: "stored-result",
        title: "A truncated tool result, in full",
        description: "The whole (redacted) result of one of your mcp_calls that was too big to return inline, as linked from that answer; readable by you, in this thread, until it expires. page=N reads page N.",
        mimeType: "text/plain",
      },
    ],
  }));
  server.server.setRequestHandler(ReadResourceRequestSchema, async (req, extra): Promise<ReadResourceResult> => {
    const uri = req.params.uri;
    const ctx = await resolve(extra);
    // A session that cannot name its caller reads as nobody: the same not-found as everything else.
    const reader = typeof ctx === "string" ? { thread: { teamId: "", channelId: "", threadTs: "" }, userId: undefined } : ctx;
    const member = reader.userId ? await isMember(d, reader.thread, reader.userId) : false;
    const out = await d.results.read(uri, { thread: reader.thread, userId: reader.userId, member });
    switch (out.kind) {
      case "not_found":
        throw new ResourceNotFound({ uri });
      case "no_such_page":
        throw new InvalidPage(`This result has ${out.pages} page(s).`);
      case "page":
        return {
          contents: [
            {
              uri: out.uri,
              mimeType: "text/plain",
              text: out.next ? `${out.text}\n[slaude-connect: page ${out.page} of ${out.pages}; the next page is ${out.next}]` : out.text,
              _meta: { "slaude-connect/page": { page: out.page, pages: out.pages, ...(out.next ? { next: out.next } : {}) } },
            },
          ],
        };
    }
  });
}
