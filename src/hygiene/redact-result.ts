import type { CallToolResult } from "@modelcontextprotocol/client";
import type { Redactor } from "./redact.js";

// A tool result's content is text *and* binary: base64 fields are decoded, redacted and re-encoded
// (Redactor.blob) so that a redacted image, audio clip or resource blob is still valid base64 and
// the result still passes the client's schema; every other string is redacted as text. Copy-on-write:
// an item that holds no secret is returned itself, so the caller can tell what redaction changed.

type Content = CallToolResult["content"][number];

/** Redacts one content item: blobs through their decoded bytes, all other strings as text; `item` itself when clean. */
export function redactContentItem(item: Content, redactor: Redactor): Content {
  if ((item.type === "image" || item.type === "audio") && typeof item.data === "string") {
    const { data, ...rest } = item;
    const cleanRest = redactor.kept(rest);
    const cleanData = redactor.blob(data);
    return cleanRest === rest && cleanData === data ? item : ({ ...cleanRest, data: cleanData } as Content);
  }
  if (item.type === "resource" && "blob" in item.resource && typeof item.resource.blob === "string") {
    const { blob, ...resourceRest } = item.resource;
    const { resource: _resource, ...rest } = item;
    const cleanRest = redactor.kept(rest);
    const cleanResource = redactor.kept(resourceRest);
    const cleanBlob = redactor.blob(blob);
    if (cleanRest === rest && cleanResource === resourceRest && cleanBlob === blob) return item;
    return { ...cleanRest, resource: { ...cleanResource, blob: cleanBlob } } as Content;
  }
  return redactor.kept(item);
}

/** The redacted content and structured content of a result; `altered` says whether anything in them changed. */
export interface RedactedResult extends Pick<CallToolResult, "content" | "structuredContent"> {
  readonly altered: boolean;
}

/**
 * Redacts the content and structured content of a vendor result (other fields are not passed on).
 * `cutEnds`: the texts were cut at an arbitrary byte, so a partial secret may end them: drop that reach.
 */
export function redactToolResult(
  result: CallToolResult,
  redactor: Redactor,
  o: { cutEnds?: boolean } = {},
): RedactedResult {
  let altered = false;
  const content = result.content.map((c) => {
    let out = redactContentItem(c, redactor);
    if (o.cutEnds && out.type === "text")
      out = { ...out, text: out.text.slice(0, Math.max(0, out.text.length - redactor.reach)) };
    if (out !== c) altered = true;
    return out;
  });
  const structured = result.structuredContent ? redactor.kept(result.structuredContent) : undefined;
  if (structured !== result.structuredContent) altered = true;
  return { content, ...(structured ? { structuredContent: structured } : {}), altered };
}
