// Reading a request body: one chunk, many chunks (a UTF-8 character split between two), none,
// over the limit (refused without reading the rest), and /mcp's answers to a body it cannot take.
import http from "node:http";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { BodyTooLargeError, readBody } from "../../src/server/host-auth.js";
import { readMcpBody } from "../../src/server/mcp-refusals.js";

const servers: http.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** A server whose every request is handed to `onRequest`; resolves with its port. */
async function serve(onRequest: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<number> {
  const server = http.createServer(onRequest);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return (server.address() as net.AddressInfo).port;
}

/** Sends a POST whose body goes out as `parts`, each its own write once the previous one is flushed. */
async function postInParts(port: number, parts: readonly Buffer[]): Promise<string> {
  const length = parts.reduce((n, p) => n + p.length, 0);
  const sock = net.connect(port, "127.0.0.1");
  await new Promise((r) => sock.once("connect", r));
  sock.setNoDelay(true);
  // The server may close before the whole body is sent (413): the answer read so far is what counts.
  sock.on("error", () => {});
  const answer = new Promise<string>((resolve) => {
    let got = "";
    sock.on("data", (d) => {
      got += d.toString("utf8");
    });
    sock.on("close", () => resolve(got));
  });
  await new Promise((r) =>
    sock.write(`POST / HTTP/1.1\r\nhost: x\r\ncontent-length: ${length}\r\nconnection: close\r\n\r\n`, r),
  );
  for (const p of parts) await new Promise((r) => sock.write(p, r));
  return answer;
}

describe("readBody", () => {
  it("reads a body sent in one chunk, in many (a UTF-8 character split across two), or empty", async () => {
    const got: string[] = [];
    let chunks = 0;
    const port = await serve((req, res) => {
      req.on("data", () => chunks++);
      void readBody(req).then((t) => {
        got.push(t);
        res.end("ok");
      });
    });
    const text = `{"a":"é€😀${"x".repeat(50)}"}`;
    const bytes = Buffer.from(text, "utf8");
    expect(await postInParts(port, [bytes])).toContain("200 OK");
    // Split inside the 4-byte emoji and inside the 3-byte euro sign.
    const at = bytes.indexOf(Buffer.from("😀")) + 2;
    const euro = bytes.indexOf(Buffer.from("€")) + 1;
    expect(await postInParts(port, [bytes.subarray(0, euro), bytes.subarray(euro, at), bytes.subarray(at)])).toContain(
      "200 OK",
    );
    expect(await postInParts(port, [])).toContain("200 OK");
    expect(got).toEqual([text, text, ""]);
    expect(chunks).toBeGreaterThanOrEqual(2);
  });

  it("refuses a body over its limit with BodyTooLargeError, counted over every chunk", async () => {
    const errors: unknown[] = [];
    const port = await serve((req, res) => {
      readBody(req, 10).then(
        () => res.end("read"),
        (err: unknown) => {
          errors.push(err);
          res.writeHead(413, { connection: "close" }).end("too large");
        },
      );
    });
    const answer = await postInParts(port, [Buffer.from("123456"), Buffer.from("78901")]);
    expect(answer).toContain("413");
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(BodyTooLargeError);
  });

  it("rejects when the client goes away before the body ends", async () => {
    let rejected: (err: unknown) => void = () => {};
    const failure = new Promise<unknown>((r) => {
      rejected = r;
    });
    const port = await serve((req) => {
      readBody(req).then(() => rejected(new Error("resolved")), rejected);
    });
    const sock = net.connect(port, "127.0.0.1");
    await new Promise((r) => sock.once("connect", r));
    await new Promise((r) => sock.write('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n{"a":', r));
    sock.destroy();
    const err = await failure;
    expect(err).toBeInstanceOf(Error);
    expect(String(err)).not.toContain("resolved");
  });
});

describe("readMcpBody", () => {
  it("parses JSON; answers a body that is not JSON with 400 Parse error and a body over 4 MiB with 413", async () => {
    const bodies: unknown[] = [];
    const port = await serve((req, res) => {
      void readMcpBody(req, res).then((read) => {
        bodies.push(read);
        if (read) res.end("ok");
      });
    });
    expect(await postInParts(port, [Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}')])).toContain("200 OK");
    const bad = await postInParts(port, [Buffer.from('{"jsonrpc":')]);
    expect(bad).toContain("400");
    expect(bad).toContain('"code":-32700');
    const big = await postInParts(port, [Buffer.alloc((4 << 20) + 1, 0x20)]);
    expect(big).toContain("413");
    expect(big).toContain('"code":-32600');
    expect(bodies).toEqual([{ body: { jsonrpc: "2.0", id: 1, method: "ping" } }, undefined, undefined]);
  });
});
