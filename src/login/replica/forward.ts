// Forwarding a login viewer's request to the replica that holds its flow: the page (HTTP) and the
// live-view WebSocket (an upgrade, then raw bytes both ways). Bounded: a connect/idle timeout, a
// response size cap, a cap on forwards in flight; hop-by-hop headers are not passed on; the request
// carries FORWARDED_HEADER so the holder serves it itself and never forwards it again.
import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { Duplex } from "node:stream";

/** Marks a forwarded request: the replica receiving it never forwards it again (no loops). */
export const FORWARDED_HEADER = "x-slaude-login-forwarded";

/** Bounds of forwarding. */
export interface ForwardLimits {
  /** No byte (connect included) for this long fails the forward; a live socket pings every 15 s. */
  readonly idleMs: number;
  /** A forwarded HTTP response longer than this is cut off (the page is a few KiB). */
  readonly maxResponseBytes: number;
  /** Forwards in flight (open sockets included) at most; more are refused with 503. */
  readonly maxInFlight: number;
}

/** Production bounds: 45 s idle (three missed heartbeats would have dropped the socket anyway), 1 MiB, 256. */
export const DEFAULT_FORWARD_LIMITS: ForwardLimits = { idleMs: 45_000, maxResponseBytes: 1 << 20, maxInFlight: 256 };

/** How a forward went: relayed (the holder answered), the holder could not be reached, or too many in flight. */
export type ForwardResult = "relayed" | "unreachable" | "busy";

// RFC 9110 §7.6.1 connection-specific fields, plus the ones a proxy must not pass on.
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** The request headers to pass on: end-to-end ones only (Host kept: the holder checks Origin against it). */
function endToEnd(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const named = new Set(
    String(headers.connection ?? "")
      .split(",")
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || HOP_BY_HOP.has(k) || named.has(k) || k === FORWARDED_HEADER) continue;
    out[k] = v;
  }
  return out;
}

/** Forwards HTTP requests and WebSocket upgrades to holder origins, within `limits`. */
export class ReplicaForwarder {
  private inFlight = 0;

  constructor(private readonly limits: ForwardLimits = DEFAULT_FORWARD_LIMITS) {}

  /** Forwards currently in flight. */
  get active(): number {
    return this.inFlight;
  }

  private open(target: string, req: http.IncomingMessage, headers: http.OutgoingHttpHeaders): http.ClientRequest {
    const url = new URL(req.url ?? "/", target);
    const mod = url.protocol === "https:" ? https : http;
    const remote = req.socket.remoteAddress;
    const xff = [req.headers["x-forwarded-for"], remote].filter(Boolean).join(", ");
    return mod.request(url, {
      method: req.method ?? "GET",
      headers: { ...headers, ...(xff ? { "x-forwarded-for": xff } : {}), [FORWARDED_HEADER]: "1" },
      // One socket per forward: nothing pooled outlives it, and the idle timer covers connect too.
      agent: false,
      timeout: this.limits.idleMs,
    });
  }

  /** Forwards a body-less request (the page) to `target` and streams the answer back; never throws. */
  forwardRequest(target: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<ForwardResult> {
    if (this.inFlight >= this.limits.maxInFlight) return Promise.resolve("busy");
    this.inFlight++;
    return new Promise<ForwardResult>((resolve) => {
      let answered = false;
      const preq = this.open(target, req, endToEnd(req.headers));
      preq.on("timeout", () => preq.destroy(new Error("holder idle timeout")));
      preq.on("error", () => {
        if (!answered) resolve("unreachable");
        else res.destroy();
      });
      preq.on("response", (pres) => {
        answered = true;
        const headers = endToEnd(pres.headers);
        res.writeHead(pres.statusCode ?? 502, headers);
        let bytes = 0;
        pres.on("data", (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes > this.limits.maxResponseBytes) {
            pres.destroy();
            res.destroy();
            return;
          }
          if (!res.write(chunk)) {
            pres.pause();
            res.once("drain", () => pres.resume());
          }
        });
        pres.on("end", () => res.end());
        pres.on("error", () => res.destroy());
        res.on("close", () => {
          pres.destroy();
          resolve("relayed");
        });
      });
      preq.end();
    }).finally(() => this.inFlight--);
  }

  /**
   * Forwards a WebSocket upgrade to `target`: the holder's handshake answer goes back as it is, then
   * bytes flow both ways until either side closes or goes idle. Never throws; nothing is written to
   * `socket` when the result is "unreachable" or "busy" (the caller answers).
   */
  forwardUpgrade(target: string, req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<ForwardResult> {
    if (this.inFlight >= this.limits.maxInFlight) return Promise.resolve("busy");
    this.inFlight++;
    let settle: () => void = () => {};
    const done = new Promise<void>((r) => (settle = r));
    void done.finally(() => this.inFlight--);
    return new Promise<ForwardResult>((resolve) => {
      let answered = false;
      const headers = {
        ...endToEnd(req.headers),
        connection: "Upgrade",
        upgrade: String(req.headers.upgrade ?? "websocket"),
      };
      const preq = this.open(target, req, headers);
      preq.on("timeout", () => preq.destroy(new Error("holder idle timeout")));
      preq.on("error", () => {
        if (answered) return;
        settle();
        resolve("unreachable");
      });
      socket.on("error", () => preq.destroy());
      preq.on("response", (pres) => {
        // The holder refused the upgrade (401, 403, …): its status goes back, the socket closes.
        answered = true;
        pres.resume();
        socket.end(
          `HTTP/1.1 ${pres.statusCode ?? 502} ${pres.statusMessage ?? ""}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
        );
        settle();
        resolve("relayed");
      });
      preq.on("upgrade", (pres, upstream, upHead) => {
        answered = true;
        preq.setTimeout(0);
        const lines = [`HTTP/1.1 ${pres.statusCode ?? 101} ${pres.statusMessage ?? "Switching Protocols"}`];
        for (let i = 0; i + 1 < pres.rawHeaders.length; i += 2)
          lines.push(`${pres.rawHeaders[i]}: ${pres.rawHeaders[i + 1]}`);
        socket.write(`${lines.join("\r\n")}\r\n\r\n`);
        if (upHead.length) socket.write(upHead);
        if (head.length) upstream.write(head);
        const end = (): void => {
          upstream.destroy();
          socket.destroy();
          settle();
        };
        for (const s of [upstream, socket]) {
          s.on("error", end);
          s.on("close", end);
        }
        upstream.setTimeout(this.limits.idleMs, end);
        if (socket instanceof net.Socket) socket.setTimeout(this.limits.idleMs, end);
        upstream.pipe(socket);
        socket.pipe(upstream);
        resolve("relayed");
      });
      preq.end();
    });
  }
}
