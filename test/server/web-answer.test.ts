import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { sendWebResponse, soleSseMessage } from "../../src/server/web-answer.js";

// sendWebResponse over a real node server and a real fetch: which SSE answers leave as one JSON body
// and which stay a stream.

const enc = new TextEncoder();
const event = (message: unknown, id?: string) =>
  enc.encode(`event: message\n${id ? `id: ${id}\n` : ""}data: ${JSON.stringify(message)}\n\n`);
const answer = { jsonrpc: "2.0", id: 7, result: { content: [{ type: "text", text: "ok\nwith a newline" }] } };
const progress = { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 1 } };
const SSE_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache, no-transform",
  "x-accel-buffering": "no",
  "mcp-session-id": "sess-1",
};

/** A stream the test feeds, as the SDK's transport feeds a request's SSE stream. */
function stream() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({
    start: (c) => {
      controller = c;
    },
  });
  return { body, controller };
}

let server: http.Server | undefined;
afterEach(async () => {
  const s = server;
  server = undefined;
  if (s) await new Promise<void>((r) => s.close(() => r()));
});

/** Serves every request with the Response `make` builds, through sendWebResponse; returns the URL. */
async function serve(make: () => Response): Promise<string> {
  server = http.createServer((req, res) => {
    req.resume();
    void sendWebResponse(res, make());
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

/** A server whose SSE answer sends `before` at once and the answer only when `late()` is called. */
async function answerLater(before: Uint8Array[]): Promise<{ url: string; late: () => void }> {
  let late!: () => void;
  const url = await serve(() => {
    const s = stream();
    queueMicrotask(() => {
      for (const c of before) s.controller.enqueue(c);
    });
    late = () => {
      s.controller.enqueue(event(answer));
      s.controller.close();
    };
    return new Response(s.body, { status: 200, headers: SSE_HEADERS });
  });
  return { url, late: () => late() };
}

describe("sendWebResponse: a request's answer", () => {
  it("is sent as application/json when the stream holds only the answer and ends with it", async () => {
    const url = await serve(() => {
      const s = stream();
      queueMicrotask(() => {
        s.controller.enqueue(event(answer));
        s.controller.close();
      });
      return new Response(s.body, { status: 200, headers: SSE_HEADERS });
    });
    const r = await fetch(url, { method: "POST", body: "{}" });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/json");
    expect(r.headers.get("mcp-session-id")).toBe("sess-1");
    expect(r.headers.get("x-accel-buffering")).toBeNull();
    const text = await r.text();
    expect(r.headers.get("content-length")).toBe(String(Buffer.byteLength(text)));
    expect(JSON.parse(text)).toEqual(answer);
  });

  it("stays a stream when anything comes before the answer (progress), each event as it came", async () => {
    const { url, late } = await answerLater([event(progress)]);
    const r = await fetch(url, { method: "POST", body: "{}" });
    expect(r.headers.get("content-type")).toBe("text/event-stream");
    const reader = r.body!.getReader();
    // The progress event reaches the client before the answer exists.
    expect(new TextDecoder().decode((await reader.read()).value)).toBe(new TextDecoder().decode(event(progress)));
    late();
    let rest = "";
    for (let c = await reader.read(); !c.done; c = await reader.read()) rest += new TextDecoder().decode(c.value);
    expect(rest).toBe(new TextDecoder().decode(event(answer)));
  });

  it("stays a stream when the answer comes after the headers had to go out (an approval's wait)", async () => {
    const { url, late } = await answerLater([]);
    // fetch resolves on the headers: they go out (after FIRST_CHUNK_WAIT_MS) with no answer yet.
    const r = await fetch(url, { method: "POST", body: "{}" });
    expect(r.headers.get("content-type")).toBe("text/event-stream");
    late();
    expect(await r.text()).toBe(new TextDecoder().decode(event(answer)));
  });

  it("stays a stream for a GET, for an event with an id, and for two answers (a batch)", async () => {
    const bodies: Uint8Array[][] = [[event(answer)], [event(answer, "ev-1")], [event(answer), event(answer)]];
    let k = 0;
    const url = await serve(() => {
      const chunks = bodies[k++ % bodies.length]!;
      const s = stream();
      queueMicrotask(() => {
        for (const c of chunks) s.controller.enqueue(c);
        s.controller.close();
      });
      return new Response(s.body, { status: 200, headers: SSE_HEADERS });
    });
    k = 0;
    const get = await fetch(url);
    expect(get.headers.get("content-type")).toBe("text/event-stream");
    expect(await get.text()).toBe(new TextDecoder().decode(event(answer)));
    k = 1;
    const withId = await fetch(url, { method: "POST", body: "{}" });
    expect(withId.headers.get("content-type")).toBe("text/event-stream");
    expect(await withId.text()).toContain("id: ev-1\n");
    k = 2;
    const batch = await fetch(url, { method: "POST", body: "{}" });
    expect(batch.headers.get("content-type")).toBe("text/event-stream");
    expect((await batch.text()).split("event: message").length - 1).toBe(2);
  });

  it("passes a JSON or body-less Response on as it is", async () => {
    let json = true;
    const url = await serve(() =>
      json ? Response.json({ a: 1 }, { status: 404 }) : new Response(null, { status: 202, headers: { "x-a": "b" } }),
    );
    const r = await fetch(url, { method: "POST", body: "{}" });
    expect([r.status, r.headers.get("content-type"), await r.text()]).toEqual([404, "application/json", '{"a":1}']);
    json = false;
    const e = await fetch(url, { method: "POST", body: "{}" });
    expect([e.status, e.headers.get("x-a"), await e.text()]).toEqual([202, "b", ""]);
  });
});

describe("soleSseMessage", () => {
  it("reads exactly one id-less message event, as a view of the chunk", () => {
    const chunk = event(answer);
    const m = soleSseMessage(chunk)!;
    expect(JSON.parse(new TextDecoder().decode(m))).toEqual(answer);
    expect(m.buffer).toBe(chunk.buffer);
  });

  it("refuses anything else", () => {
    for (const text of [
      "",
      "event: message\ndata: \n\n",
      'event: message\nid: 1\ndata: {"a":1}\n\n',
      'event: message\ndata: {"a":1}\n\nevent: message\ndata: {"b":2}\n\n',
      'event: message\ndata: {"a":1}\ndata: {"b":2}\n\n',
      'event: message\ndata: {"a":1}\n',
      'event: other\ndata: {"a":1}\n\n',
      ": keepalive\n\n",
    ])
      expect(soleSseMessage(enc.encode(text)), JSON.stringify(text)).toBeUndefined();
  });
});
