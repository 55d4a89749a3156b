import type { CallToolResult, JSONRPCMessage } from "@modelcontextprotocol/client";
import { JSONRPCMessageSchema, JSONRPCResultResponseSchema } from "@modelcontextprotocol/core";

// Newline-delimited JSON-RPC framing of a vendor's stdout with a per-line cap. A line over the cap
// is never held: only its first bytes (for an excerpt) and last bytes (where serializers put the
// id) are kept while the rest streams past. If it is a tools/call *result*, the caller answers the
// pending request with a truncated result instead of killing a vendor that merely said too much.

/** One stdout line: a parsed message, or the kept ends of a line over the cap. */
export type Frame =
  | { readonly kind: "message"; readonly message: JSONRPCMessage }
  | { readonly kind: "oversized"; readonly bytes: number; readonly head: Buffer; readonly tail: Buffer };

/**
 * The `_meta` key under which the reader leaves a `FrameMark` on every result it read (vendors cannot
 * set it: a vendor's own value under it is dropped, and JSON cannot make a FrameMark).
 */
export const FRAME_META = "io.slaude-connect/frame";

/**
 * What the reader counted of the line a result came in: its size in bytes, and whether the result
 * was synthesised from an oversized line. A class instance: the SDK's result schema passes `_meta`
 * values through by reference, and no vendor (stdio or remote) can send one, so it cannot be forged.
 */
export class FrameMark {
  constructor(
    readonly bytes: number,
    readonly truncated: boolean,
  ) {}
}

const HEAD_KEEP = 64 * 1024;
const TAIL_KEEP = 512;

/** Splits a byte stream into lines, parsing those within `maxBytes`; memory stays under ~maxBytes + one chunk. */
export class FrameReader {
  private chunks: Buffer[] = [];
  private size = 0;
  private over: { head: Buffer; tail: Buffer; bytes: number } | undefined;

  constructor(private readonly maxBytes: number) {}

  /** Feeds `chunk`; calls `onFrame` for each completed line in order. Throws on a malformed line within the cap. */
  push(chunk: Buffer, onFrame: (f: Frame) => void): void {
    let rest = chunk;
    for (;;) {
      const nl = rest.indexOf(0x0a);
      this.take(nl < 0 ? rest : rest.subarray(0, nl));
      if (nl < 0) return;
      rest = rest.subarray(nl + 1);
      onFrame(this.finish());
    }
  }

  /** Drops whatever is buffered (the child is gone). */
  clear(): void {
    this.chunks = [];
    this.size = 0;
    this.over = undefined;
  }

  private take(piece: Buffer): void {
    if (this.over) {
      this.over.bytes += piece.length;
      this.over.tail = lastBytes([this.over.tail, piece], TAIL_KEEP);
    } else if (this.size + piece.length > this.maxBytes) {
      const parts = [...this.chunks, piece];
      this.over = {
        head: firstBytes(parts, HEAD_KEEP),
        tail: lastBytes(parts, TAIL_KEEP),
        bytes: this.size + piece.length,
      };
      this.chunks = [];
      this.size = 0;
    } else if (piece.length > 0) {
      this.chunks.push(piece);
      this.size += piece.length;
    }
  }

  private finish(): Frame {
    const over = this.over;
    if (over) {
      this.over = undefined;
      return { kind: "oversized", ...over };
    }
    const line = Buffer.concat(this.chunks, this.size).toString("utf8").replace(/\r$/, "");
    const bytes = this.size;
    this.chunks = [];
    this.size = 0;
    const message = parseMessage(line);
    if ("result" in message) markResult(message.result, new FrameMark(bytes, false));
    return { kind: "message", message };
  }
}

/**
 * A line as the SDK's `deserializeMessage` reads it (the JSON-RPC message union), but a response
 * goes straight to the one branch that can accept it: the union would first fail the request and
 * notification branches (building their issues) on every result. Same messages accepted, same output.
 */
function parseMessage(line: string): JSONRPCMessage {
  const value: unknown = JSON.parse(line);
  // Every branch is strict: with `result` and neither `method` nor `error`, only the result branch can match.
  if (isRecord(value) && "result" in value && !("method" in value) && !("error" in value))
    return JSONRPCResultResponseSchema.parse(value) as JSONRPCMessage;
  return JSONRPCMessageSchema.parse(value) as JSONRPCMessage;
}

/**
 * Leaves `mark` in a result's `_meta` (replacing anything a vendor put under FRAME_META), so hygiene
 * takes the size the vendor sent instead of serialising the result again. A result that is not an
 * object, or whose `_meta` is not one, is left as it came: the client's schema refuses it.
 */
function markResult(result: unknown, mark: FrameMark): void {
  if (!isRecord(result)) return;
  const meta = result._meta;
  if (meta === undefined) result._meta = { [FRAME_META]: mark };
  else if (isRecord(meta)) meta[FRAME_META] = mark;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A copy of the first `n` bytes of `parts` (a copy, so the big chunks they came from can be freed). */
function firstBytes(parts: readonly Buffer[], n: number): Buffer {
  const out: Buffer[] = [];
  let have = 0;
  for (const p of parts) {
    if (have >= n) break;
    out.push(p);
    have += p.length;
  }
  return Buffer.from(Buffer.concat(out).subarray(0, n));
}

/** A copy of the last `n` bytes of `parts`. */
function lastBytes(parts: readonly Buffer[], n: number): Buffer {
  const out: Buffer[] = [];
  let have = 0;
  for (let i = parts.length - 1; i >= 0 && have < n; i--) {
    out.unshift(parts[i]!);
    have += parts[i]!.length;
  }
  const all = Buffer.concat(out);
  return Buffer.from(all.subarray(Math.max(0, all.length - n)));
}

const ID = String.raw`(-?\d+|"(?:[^"\\]|\\.)*")`;
const PAIR = String.raw`(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*${ID}|"id"\s*:\s*${ID}\s*,\s*"jsonrpc"\s*:\s*"2\.0")`;
/** `{"result": …, "jsonrpc": "2.0", "id": 3}` (the SDK's order): the id is at the very end. */
const RESULT_FIRST = /^\s*\{\s*"result"\s*:/;
const TAIL_ID = new RegExp(String.raw`\}\s*,\s*${PAIR}\s*\}\s*$`);
/** `{"jsonrpc": "2.0", "id": 3, "result": …}` (other serializers): the id is at the start. */
const HEAD_ID = new RegExp(String.raw`^\s*\{\s*${PAIR}\s*,\s*"result"\s*:`);

/**
 * The truncated response that answers an oversized tools/call result: the start of its first text
 * block and the original size in `_meta`. Undefined when the line is not recognisably a result.
 */
export function oversizedResponse(frame: Extract<Frame, { kind: "oversized" }>): JSONRPCMessage | undefined {
  const head = frame.head.toString("utf8").replace(/\uFFFD$/, "");
  const tail = frame.tail.toString("utf8");
  const m = RESULT_FIRST.test(head) ? TAIL_ID.exec(tail) : HEAD_ID.exec(head);
  const raw = m?.[1] ?? m?.[2];
  if (raw === undefined) return undefined;
  const id = JSON.parse(raw) as string | number;
  const at = /"text"\s*:\s*"/.exec(head);
  const excerpt = at ? partialJsonString(head.slice(at.index + at[0].length)) : "";
  const result: CallToolResult = {
    content: [{ type: "text", text: excerpt }],
    _meta: { [FRAME_META]: new FrameMark(frame.bytes, true) },
  };
  return { jsonrpc: "2.0", id, result };
}

/** The reader's mark on a result it read; undefined for one it did not (a remote vendor's, a test's). */
export function frameOf(result: CallToolResult): FrameMark | undefined {
  const mark = result._meta?.[FRAME_META];
  return mark instanceof FrameMark ? mark : undefined;
}

/** The original size of a result the broker cut from an oversized frame, if this is one. */
export function frameTruncatedBytes(result: CallToolResult): number | undefined {
  const mark = frameOf(result);
  return mark?.truncated ? mark.bytes : undefined;
}

const ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", b: "\b", f: "\f", '"': '"', "\\": "\\", "/": "/" };

/** Decodes the start of a JSON string body up to its closing quote or a cut escape. */
function partialJsonString(s: string): string {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '"') break;
    if (c !== "\\") {
      out += c;
      continue;
    }
    const n = s[i + 1];
    if (n === "u") {
      const hex = s.slice(i + 2, i + 6);
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) break;
      out += String.fromCharCode(parseInt(hex, 16));
      i += 5;
      continue;
    }
    const e = n === undefined ? undefined : ESCAPES[n];
    if (e === undefined) break;
    out += e;
    i++;
  }
  return out;
}
