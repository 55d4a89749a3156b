import type http from "node:http";

// web Response -> node:http: what the SDK's web-standard transport answers, written to the node
// response (its Request comes from web-bridge.ts). A request's answer that is ready at once leaves
// as one JSON body; anything that streams stays an SSE stream.

/**
 * How long the first chunk of a streamed body may take before the headers go out alone. A warm call's
 * answer arrives well within it, so it leaves in one write; a stream that stays quiet (a call waiting
 * for an approval) still gets its headers this soon, which is all a client waits for (an HTTP
 * client's header timeout, a proxy's idle one).
 */
export const FIRST_CHUNK_WAIT_MS = 20;

const SSE_MESSAGE_START = new TextEncoder().encode("event: message\ndata: ");
const SSE_EVENT_END = new TextEncoder().encode("\n\n");
const NEWLINE = 0x0a;

/**
 * The JSON-RPC message of an SSE body that is exactly one `message` event without an id (what the
 * SDK's transport writes for a request's answer: `event: message`, `data: <one line of JSON>`),
 * as a view of `chunk`; undefined for anything else.
 */
export function soleSseMessage(chunk: Uint8Array): Uint8Array | undefined {
  const head = SSE_MESSAGE_START.length;
  const end = chunk.length - SSE_EVENT_END.length;
  if (end <= head) return undefined;
  for (let i = 0; i < head; i++) if (chunk[i] !== SSE_MESSAGE_START[i]) return undefined;
  if (chunk[end] !== NEWLINE || chunk[end + 1] !== NEWLINE) return undefined;
  // One data line: JSON.stringify writes no raw newline, so another one means another field or event.
  const nl = chunk.indexOf(NEWLINE, head);
  return nl === end ? chunk.subarray(head, end) : undefined;
}

/** The headers of `r` as node writes them. */
function nodeHeaders(r: Response): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  r.headers.forEach((v, k) => {
    headers[k] = k === "set-cookie" ? r.headers.getSetCookie() : v;
  });
  return headers;
}

/**
 * Writes `r` to `res`, streaming its body (an SSE stream stays open as long as the transport keeps
 * it). When the client goes away first, the body is cancelled so the transport drops the stream.
 *
 * The answer to a POST that the SDK's transport streams as SSE is sent as `application/json`
 * instead when the stream turns out to hold just that one answer: its only event arrives before the
 * headers had to go out (FIRST_CHUNK_WAIT_MS) and the stream ends with it. Streamable HTTP lets the
 * server choose either for a request's answer and every client must read both; a client parses one
 * JSON body for much less than an event stream. A stream that sends anything before its answer
 * (progress), or stays quiet past the wait (an approval), is streamed as it was. Output is corked
 * until the event loop's next turn: what the transport emits together (an answer and the stream's
 * end) reaches the socket in one write instead of one per piece.
 */
export async function sendWebResponse(res: http.ServerResponse, r: Response): Promise<void> {
  const headers = nodeHeaders(r);
  if (!r.body) {
    res.writeHead(r.status, headers);
    res.end();
    return;
  }
  const reader = r.body.getReader();
  const gone = (): void => void reader.cancel().catch(() => {});
  res.once("close", gone);
  // Headers go out with the first chunk, or alone once it is late: a client reads nothing of an SSE stream before them.
  let headersSent = false;
  const sendHeaders = (): void => {
    if (headersSent) return;
    headersSent = true;
    res.writeHead(r.status, headers);
  };
  const early = setTimeout(() => {
    if (headersSent || res.destroyed) return;
    sendHeaders();
    res.flushHeaders();
  }, FIRST_CHUNK_WAIT_MS);
  let corked = false;
  const uncork = (): void => {
    corked = false;
    res.uncork();
  };
  const write = async (value: Uint8Array): Promise<void> => {
    sendHeaders();
    if (!corked) {
      corked = true;
      res.cork();
      setImmediate(uncork);
    }
    if (!res.write(value)) await drained(res);
  };
  const answerable = r.status === 200 && res.req?.method === "POST" && isEventStream(r.headers.get("content-type"));
  // One read ahead: whether the stream ends right after its first event decides how it is sent. A
  // read left behind (the client gone, the stream errored) is settled by the cancel, never unhandled.
  const read = () => {
    const p = reader.read();
    p.catch(() => {});
    return p;
  };
  try {
    let next = read();
    for (let first = true; ; first = false) {
      const { done, value } = await next;
      if (done) break;
      next = read();
      clearTimeout(early);
      if (first && !headersSent && answerable) {
        // The transport ends a request's stream in the same turn as it writes the answer (or when
        // it closes: a lone notification then reaches the client with no answer either way).
        const message = soleSseMessage(value);
        if (message && (await endsNow(next))) return sendJsonAnswer(res, r.status, headers, message);
      }
      await write(value);
      if (res.destroyed) break;
    }
  } catch {
    // The stream was cancelled (client gone) or errored: nothing more can be sent.
  } finally {
    clearTimeout(early);
    res.off("close", gone);
    if (res.destroyed) gone();
    else if (!res.writableEnded) {
      sendHeaders();
      res.end();
    }
  }
}

function isEventStream(contentType: string | null): boolean {
  return contentType?.split(";")[0]?.trim().toLowerCase() === "text/event-stream";
}

/** Whether `next` (the stream's next read) says the stream has ended before the event loop's next turn. */
function endsNow(next: Promise<{ readonly done: boolean }>): Promise<boolean> {
  return new Promise((resolve) => {
    const late = setImmediate(() => resolve(false));
    next.then(
      (r) => {
        clearImmediate(late);
        resolve(r.done);
      },
      () => {
        clearImmediate(late);
        resolve(false);
      },
    );
  });
}

/** One JSON-RPC answer as an `application/json` body, in one write. */
function sendJsonAnswer(
  res: http.ServerResponse,
  status: number,
  sse: Record<string, string | string[]>,
  message: Uint8Array,
): void {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(sse)) if (k !== "content-type" && k !== "x-accel-buffering") headers[k] = v;
  headers["content-type"] = "application/json";
  headers["content-length"] = String(message.length);
  res.writeHead(status, headers);
  res.end(message);
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
