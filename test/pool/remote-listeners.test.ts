import { getEventListeners } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { connectRemote, perRequestSignal, type RemoteSession } from "../../src/pool/remote.js";
import { type RemoteVendor, startRemoteVendor } from "../fixtures/remote-vendor.js";

// The SDK's Streamable HTTP transport hands one AbortSignal, alive as long as the session, to every
// fetch, and Node's fetch adds an abort listener to it per request that only a garbage collection
// removes: past 1,500 calls between two major collections Node warns, and the listeners (with the
// requests they hold) pile up. A remote vendor's session is long-lived, so the broker gives each
// request its own signal: the count on the session's signal stays flat, however many calls.

const TOKEN = "remote-listeners-token";
const vendors: RemoteVendor[] = [];
const sessions: RemoteSession[] = [];

afterEach(async () => {
  for (const s of sessions.splice(0)) await s.client.close().catch(() => {});
  for (const v of vendors.splice(0)) await v.close();
});

describe("remote vendor session over many calls", () => {
  it("1,700 sequential calls over one Streamable HTTP session raise no MaxListenersExceededWarning", async () => {
    const v = await startRemoteVendor({ tokens: { [TOKEN]: "alice" }, standaloneStream: false });
    vendors.push(v);
    const s = await connectRemote({
      url: new URL(v.url),
      protocol: "streamable-http",
      headers: { Authorization: `Bearer ${TOKEN}` },
      initializeTimeoutMs: 10_000,
    });
    sessions.push(s);
    const warnings: string[] = [];
    const onWarning = (w: Error) => {
      if (w.name === "MaxListenersExceededWarning") warnings.push(w.message);
    };
    process.on("warning", onWarning);
    try {
      for (let i = 0; i < 1_700; i++) {
        const r = await s.client.callTool({ name: "whoami", arguments: {} });
        expect(r.content).toEqual([{ type: "text", text: "alice" }]);
      }
      // Warnings are emitted on the next tick: let them arrive before reading.
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings).toEqual([]);
    expect(v.calls.length).toBe(1_700);
  }, 120_000);

  it("a request's own signal leaves no listener on the session's, and aborting the session's still ends a response mid-stream", async () => {
    // A real server on loopback: /done answers at once, /hold starts a body and never ends it.
    const server = http.createServer((req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      if (req.url === "/done") res.end("ok");
      else res.write("partial");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const session = new AbortController();
      const f = perRequestSignal(fetch);
      for (let i = 0; i < 50; i++)
        expect(await (await f(`${base}/done`, { signal: session.signal })).text()).toBe("ok");
      expect(getEventListeners(session.signal, "abort")).toHaveLength(0);

      const held = await f(`${base}/hold`, { signal: session.signal });
      const reader = held.body!.getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toBe("partial");
      const rest = reader.read();
      session.abort();
      await expect(rest).rejects.toThrow();
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
