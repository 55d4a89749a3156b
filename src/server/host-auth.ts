import { createHash, hash, timingSafeEqual } from "node:crypto";
import type http from "node:http";

/** Checks `Authorization: Bearer <token>` against the configured host tokens in constant time. */
export class HostTokenAuth {
  private readonly digests: Buffer[];
  constructor(tokens: readonly string[]) {
    // Comparing fixed-length digests keeps the comparison constant-time whatever the lengths.
    this.digests = tokens.map((t) => createHash("sha256").update(t).digest());
  }

  get configured(): boolean {
    return this.digests.length > 0;
  }

  verify(req: http.IncomingMessage): boolean {
    const header = req.headers.authorization;
    if (!header?.startsWith("Bearer ")) return false;
    const presented = hash("sha256", header.slice(7).trim(), "buffer");
    let ok = false;
    for (const d of this.digests) ok = timingSafeEqual(d, presented) || ok;
    return ok;
  }
}

/**
 * Host/Origin validation against DNS rebinding: the Host header must name this server, and a
 * browser Origin, when present, must be one we serve.
 */
export class OriginGuard {
  private readonly hosts: Set<string>;
  private readonly origins: Set<string>;

  constructor(opts: {
    publicUrl: string;
    port: number;
    allowedHosts: readonly string[];
    allowedOrigins: readonly string[];
  }) {
    const pub = new URL(opts.publicUrl);
    this.hosts = new Set(
      [pub.host, `localhost:${opts.port}`, `127.0.0.1:${opts.port}`, `[::1]:${opts.port}`, ...opts.allowedHosts].map(
        (h) => h.toLowerCase(),
      ),
    );
    this.origins = new Set([pub.origin, ...opts.allowedOrigins].map((o) => o.toLowerCase()));
  }

  /** Adds the actually bound port (when listening on port 0). */
  allowPort(port: number): void {
    for (const h of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) this.hosts.add(h);
  }

  check(req: http.IncomingMessage): "ok" | "bad_host" | "bad_origin" {
    const host = (req.headers.host ?? "").toLowerCase();
    if (!this.hosts.has(host)) return "bad_host";
    const origin = req.headers.origin;
    if (origin !== undefined && !this.origins.has(origin.toLowerCase())) return "bad_origin";
    return "ok";
  }
}

/** A request body over its route's limit: answered 413, never as a parse error. */
export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`request body over ${limit} bytes`);
    this.name = "BodyTooLargeError";
  }
}

/**
 * Reads a request body as UTF-8; rejects with BodyTooLargeError past `max` bytes (the rest is not
 * read), and with an error when the client goes away before the body ends. Plain listeners, not the
 * stream's async iterator: on the warm path that iterator cost more than the parse of the body.
 */
export function readBody(req: http.IncomingMessage, max = 1 << 20): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    // The common body is one chunk: kept apart, no array and no concatenation for it.
    let first: Buffer | undefined;
    let more: Buffer[] | undefined;
    let size = 0;
    const stop = (): void => {
      req.off("data", onData).off("end", onEnd).off("error", onError).off("close", onClose);
    };
    const onData = (c: Buffer): void => {
      size += c.length;
      if (size > max) {
        stop();
        req.pause();
        reject(new BodyTooLargeError(max));
        return;
      }
      if (first === undefined) first = c;
      else if (more === undefined) more = [first, c];
      else more.push(c);
    };
    const onEnd = (): void => {
      stop();
      resolve(more ? Buffer.concat(more, size).toString("utf8") : first ? first.toString("utf8") : "");
    };
    const onError = (err: Error): void => {
      stop();
      reject(err);
    };
    const onClose = (): void => {
      stop();
      reject(new Error("the request closed before its body ended"));
    };
    req.on("data", onData).on("end", onEnd).on("error", onError).on("close", onClose);
  });
}
