import type http from "node:http";

// node:http <-> web Request/Response, for the SDK's web-standard Streamable HTTP transport. We hold
// that transport ourselves (not the node wrapper, which hides it) so a session can also be fed an
// internal request: the replayed initialize that rebuilds a session opened on another replica.

const ORIGIN = "http://slaude-connect.invalid";

/** `path` (a request line's target) as an origin-form path and query: never another host. */
function originForm(path: string): string {
  if (path.startsWith("/") && !path.startsWith("//")) return path;
  const u = new URL(path, ORIGIN);
  return `${u.pathname}${u.search}`;
}

/**
 * A web Request with the method, path and headers of `req`; no body (the endpoint has parsed it
 * already). `signal`, when given, is the request's: the SDK ends the exchange when it aborts.
 */
export function toWebRequest(req: http.IncomingMessage, signal?: AbortSignal): Request {
  // From the raw name/value list, not `headersDistinct` (an object of arrays built on first read): half the cost.
  const headers = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!);
  // The path is all the transport reads of the URL; the origin is fixed (Host was checked by OriginGuard). An
  // origin-form path is appended to it as it is (no URL parse of our own); any other form gives its path only.
  return new Request(`${ORIGIN}${originForm(req.url ?? "/mcp")}`, {
    method: req.method ?? "GET",
    headers,
    ...(signal ? { signal } : {}),
  });
}

/**
 * How long the first chunk of a streamed body may take before the headers go out alone. A warm call's
 * answer arrives well within it, so its headers, event and end leave in one write; a stream that stays
 * quiet (a call waiting for an approval) still gets its headers this soon, which is all a client waits for.
 */
export const FIRST_CHUNK_WAIT_MS = 20;

/**
 * Writes `r` to `res`, streaming its body (an SSE stream stays open as long as the transport keeps
 * it). When the client goes away first, the body is cancelled so the transport drops the stream.
 * Output is corked until the event loop's next turn: what the transport emits together (an answer
 * and the stream's end) reaches the socket in one write instead of one per piece.
 */
export async function sendWebResponse(res: http.ServerResponse, r: Response): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  r.headers.forEach((v, k) => {
    headers[k] = k === "set-cookie" ? r.headers.getSetCookie() : v;
  });
  res.writeHead(r.status, headers);
  if (!r.body) {
    res.end();
    return;
  }
  const reader = r.body.getReader();
  const gone = (): void => void reader.cancel().catch(() => {});
  res.once("close", gone);
  // Headers go out with the first chunk, or alone once it is late: a client reads nothing of an SSE stream before them.
  let headersSent = false;
  const early = setTimeout(() => {
    if (!headersSent && !res.destroyed) res.flushHeaders();
    headersSent = true;
  }, FIRST_CHUNK_WAIT_MS);
  let corked = false;
  const uncork = (): void => {
    corked = false;
    res.uncork();
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      headersSent = true;
      clearTimeout(early);
      if (!corked) {
        corked = true;
        res.cork();
        setImmediate(uncork);
      }
      if (!res.write(value)) await drained(res);
      if (res.destroyed) break;
    }
  } catch {
    // The stream was cancelled (client gone) or errored: nothing more can be sent.
  } finally {
    clearTimeout(early);
    res.off("close", gone);
    if (res.destroyed) gone();
    else res.end();
  }
}

/** Resolves when `res` can take more data, or when it closed (the caller stops then). */
function drained(res: http.ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.once("drain", done);
    res.once("close", done);
  });
}
