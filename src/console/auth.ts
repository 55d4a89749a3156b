import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type http from "node:http";
import { LRUCache } from "lru-cache";

// Console access the way Jupyter does it: a token printed once at start-up is exchanged for an
// HttpOnly, SameSite=Strict session cookie; every state-changing request also carries the
// session's CSRF token in a header, which a cross-site page can neither read nor send.

/** The header every state-changing console request must carry (value from GET /console/api/session). */
export const CSRF_HEADER = "x-console-csrf";

/** Browser sessions kept at once; the least recently used one is signed out beyond it. */
const MAX_SESSIONS = 32;

const digest = (s: string): Buffer => createHash("sha256").update(s).digest();

/** One signed-in browser: the CSRF token its page must echo. */
export interface ConsoleSession {
  readonly csrf: string;
}

/** The console token, its sessions (bounded) and the cookie carrying them. */
export class ConsoleAuth {
  private readonly tokenDigest: Buffer;
  /** sha256(session id) → session; the cookie value itself is never kept. */
  private readonly sessions = new LRUCache<string, ConsoleSession>({ max: MAX_SESSIONS });
  /** Cookies are not isolated by port on localhost: the name carries it, so two brokers never clash. */
  readonly cookieName: string;

  /** `token` is the secret printed in the console link; `secure` adds the Secure cookie flag (https). */
  constructor(
    readonly token: string,
    port: number,
    private readonly secure: boolean,
  ) {
    this.tokenDigest = digest(token);
    this.cookieName = `slaude_console_${port}`;
  }

  /** A fresh random console token (32 bytes, base64url). */
  static newToken(): string {
    return randomBytes(32).toString("base64url");
  }

  /** Whether `presented` is the console token (constant time). */
  tokenMatches(presented: string): boolean {
    return timingSafeEqual(this.tokenDigest, digest(presented));
  }

  /** Starts a browser session; returns the Set-Cookie header value for it. */
  signIn(): string {
    const id = randomBytes(32).toString("base64url");
    this.sessions.set(digest(id).toString("hex"), { csrf: randomBytes(24).toString("base64url") });
    return `${this.cookieName}=${id}; Path=/console; HttpOnly; SameSite=Strict${this.secure ? "; Secure" : ""}`;
  }

  /** The session of the request's cookie, or undefined when it carries none we issued. */
  session(req: http.IncomingMessage): ConsoleSession | undefined {
    const id = cookieValue(req.headers.cookie, this.cookieName);
    return id === undefined ? undefined : this.sessions.get(digest(id).toString("hex"));
  }

  /** Whether a state-changing request carries its session's CSRF token (constant time). */
  csrfMatches(req: http.IncomingMessage, s: ConsoleSession): boolean {
    const v = req.headers[CSRF_HEADER];
    return typeof v === "string" && timingSafeEqual(digest(v), digest(s.csrf));
  }

  /** Signs every browser out (on shutdown). */
  clear(): void {
    this.sessions.clear();
  }
}

/** The value of cookie `name` in a Cookie header; undefined when absent or repeated (ambiguous). */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  let found: string | undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    if (found !== undefined) return undefined;
    found = part.slice(eq + 1).trim();
  }
  return found && /^[A-Za-z0-9_-]{1,128}$/.test(found) ? found : undefined;
}
