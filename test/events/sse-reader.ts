// A Server-Sent Events reader for tests: opens GET /v1/events with fetch, parses frames as they
// arrive, and keeps the raw text (for canary checks) and every parsed event.
import { vi } from "vitest";

/** One parsed SSE frame. */
export interface SseEvent {
  readonly id: string;
  readonly event: string;
  readonly data: Record<string, unknown> & { type: string; callId: string; teamId: string };
}

/** An open event stream. */
export class SseReader {
  readonly events: SseEvent[] = [];
  raw = "";
  ended = false;
  private buf = "";

  private constructor(private readonly abort: AbortController) {}

  /** Opens the stream; resolves once the server's "subscribed" comment arrived (events from then on reach it). */
  static async open(url: string, token: string): Promise<SseReader> {
    const abort = new AbortController();
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal });
    if (res.status !== 200 || !res.body) throw new Error(`events stream refused: ${res.status} ${await res.text()}`);
    const r = new SseReader(abort);
    void r.pump(res.body.getReader());
    await vi.waitFor(
      () => {
        if (!r.raw.includes(": subscribed")) throw new Error("not subscribed yet");
      },
      { timeout: 10_000, interval: 10 },
    );
    return r;
  }

  private async pump(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
    const dec = new TextDecoder();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const text = dec.decode(value, { stream: true });
        this.raw += text;
        this.buf += text;
        for (let cut = this.buf.indexOf("\n\n"); cut >= 0; cut = this.buf.indexOf("\n\n")) {
          const frame = this.buf.slice(0, cut);
          this.buf = this.buf.slice(cut + 2);
          const fields = new Map<string, string>();
          for (const line of frame.split("\n")) {
            if (line.startsWith(":")) continue;
            const i = line.indexOf(": ");
            if (i > 0) fields.set(line.slice(0, i), line.slice(i + 2));
          }
          const data = fields.get("data");
          if (data !== undefined)
            this.events.push({ id: fields.get("id") ?? "", event: fields.get("event") ?? "", data: JSON.parse(data) });
        }
      }
    } catch {
      // Aborted by close(), or the server dropped the stream.
    } finally {
      this.ended = true;
    }
  }

  /** The events of one call, in order. */
  ofCall(callId: string): SseEvent[] {
    return this.events.filter((e) => e.data.callId === callId);
  }

  /** Waits (bounded) until an event matching `pred` has arrived; returns it. */
  async waitFor(pred: (e: SseEvent) => boolean, timeout = 20_000): Promise<SseEvent> {
    return vi.waitFor(
      () => {
        const e = this.events.find(pred);
        if (!e) throw new Error("event not seen yet");
        return e;
      },
      { timeout, interval: 20 },
    );
  }

  close(): void {
    this.abort.abort();
  }
}
