import type { CallToolResult } from "@modelcontextprotocol/client";
import type { Redactor } from "./redact.js";

// A tool result's content is text *and* binary: base64 fields are decoded, redacted and re-encoded
// (Redactor.blob) so that a redacted image, audio clip or resource blob is still valid base64 and
// the result still passes the client's schema; every other string is redacted as text.

type Content = CallToolResult["content"][number];

/** Redacts one content item: blobs through their decoded bytes, all other strings as text. */
export function redactContentItem(item: Content, redactor: Redactor): Content {
  if ((item.type === "image" || item.type === "audio") && typeof item.data === "string") {
    const { data, ...rest } = item;
    return { ...redactor.deep(rest), data: redactor.blob(data) } as Content;
  }
  if (item.type === "resource" && "blob" in item.resource && typeof item.resource.blob === "string") {
    const { blob, ...resourceRest } = item.resource;
    const { resource: _resource, ...rest } = item;
    return {
      ...redactor.deep(rest),
      resource: { ...redactor.deep(resourceRest), blob: redactor.blob(blob) },
    } as Content;
  }
  return redactor.deep(item);
}

/**
 * Redacts the content and structured content of a vendor result (other fields are not passed on).
 * `cutEnds`: the texts were cut at an arbitrary byte, so a partial secret may end them: drop that reach.
 */
export function redactToolResult(
  result: CallToolResult,
  redactor: Redactor,
  o: { cutEnds?: boolean } = {},
): Pick<CallToolResult, "content" | "structuredContent"> {
  const cut = (c: Content): Content =>
    o.cutEnds && c.type === "text" ? { ...c, text: c.text.slice(0, Math.max(0, c.text.length - redactor.reach)) } : c;
  return {
    content: result.content.map((c) => cut(redactContentItem(c, redactor))),
    ...(result.structuredContent ? { structuredContent: redactor.deep(result.structuredContent) } : {}),
  };
}
