import type http from "node:http";
import type { Clock, Timer } from "../clock/clock.js";

// Server-Sent Events to the console pages: the page listens, the server pushes (no polling loop in
// the page). Bounded: a cap on open streams, and a stream that stops reading is dropped rather
// than buffered without end.

/** Limits of the event hub. */
export interface SseLimits {
  /** Open streams at once; a new one beyond it closes the oldest. */
  readonly maxClients: number;
  /** Bytes queued for one slow reader before its stream is dropped. */
  readonly maxBufferedBytes: number;
  /** A comment line this often keeps proxies and the browser from timing the stream out. */
  readonly heartbeatMs: number;
}

/** Defaults of {@link SseLimits}. */
export const DEFAULT_SSE_LIMITS: SseLimits = { maxClients: 16, maxBufferedBytes: 1 << 20, heartbeatMs: 25_000 };

/** One named event: `type` is the SSE event name, `data` its JSON payload. */
export interface ConsoleEvent {
  readonly type: "inbox" | "workspace" | "thread" | "progress" | "audit";
  readonly data: unknown;
}

/** The open event streams of the console and the broadcast to them. */
export class SseHub {
  private readonly clients = new Set<http.ServerResponse>();
  private heartbeat: Timer | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly limits: SseLimits = DEFAULT_SSE_LIMITS,
  ) {}

  /** Streams open now (at most `maxClients`). */
  get size(): number {
    return this.clients.size;
  }

  /** Turns `res` into an event stream until the client goes away or the hub closes. */
  open(res: http.ServerResponse): void {
    if (this.clients.size >= this.limits.maxClients) {
      const oldest = this.clients.values().next().value;
      if (oldest) this.drop(oldest);
    }
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
      connection: "keep-alive",
    });
    res.write("retry: 2000\n\n");
    this.clients.add(res);
    // The response closes when the browser goes away (the request itself ends at once for a GET).
    res.on("close", () => this.clients.delete(res));
    this.heartbeat ??= this.clock.setInterval(() => this.comment("ping"), this.limits.heartbeatMs, { unref: true });
  }

  /** Sends one event to every open stream. */
  broadcast(e: ConsoleEvent): void {
    this.send(`event: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`);
  }

  private comment(text: string): void {
    this.send(`: ${text}\n\n`);
  }

  private send(frame: string): void {
    for (const res of [...this.clients]) {
      if (res.writableLength > this.limits.maxBufferedBytes) this.drop(res);
      else res.write(frame);
    }
  }

  private drop(res: http.ServerResponse): void {
    this.clients.delete(res);
    res.destroy();
  }

  /** Ends every stream (server shutdown). */
  close(): void {
    this.heartbeat?.cancel();
    this.heartbeat = undefined;
    for (const res of [...this.clients]) {
      this.clients.delete(res);
      res.end();
    }
  }
}
