// The address of a stored result: `slaude://results/<id>` (page 1) or `slaude://results/<id>?page=N`.
// Parsed strictly: anything else is not a stored result's address.

/** The scheme and path every stored result's URI starts with. */
export const RESULT_URI_PREFIX = "slaude://results/";

/** The RFC 6570 template of stored results' URIs (resources/templates/list). */
export const RESULT_URI_TEMPLATE = "slaude://results/{id}{?page}";

/** The largest page number a URI may name (far above any real result; bounds the parse). */
export const MAX_PAGE = 1_000_000;

const URI = /^slaude:\/\/results\/(res_[A-Za-z0-9_-]{16})(?:\?page=([1-9][0-9]{0,6}))?$/;

/** The URI of page `page` (1-based) of stored result `id`; page 1 is the bare URI. */
export function resultUri(id: string, page = 1): string {
  return page === 1 ? `${RESULT_URI_PREFIX}${id}` : `${RESULT_URI_PREFIX}${id}?page=${page}`;
}

/** The result id and page a URI names, or undefined when it is not exactly a stored result's URI. */
export function parseResultUri(uri: string): { readonly id: string; readonly page: number } | undefined {
  const m = URI.exec(uri);
  if (!m) return undefined;
  const page = m[2] === undefined ? 1 : Number(m[2]);
  return page <= MAX_PAGE ? { id: m[1]!, page } : undefined;
}
