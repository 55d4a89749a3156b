// Real TLS for fakes on loopback: a throwaway self-signed certificate for 127.0.0.1 and localhost
// (made by openssl, which the machine and CI have: a missing openssl fails the test, never skips
// it), and a fetch that trusts exactly that certificate, so an https fake is an https origin to
// the code under test without touching the process's trust store.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import path from "node:path";

/** A key and certificate in PEM. */
export interface TestCert {
  readonly key: string;
  readonly cert: string;
}

let made: TestCert | undefined;

/** A self-signed EC certificate valid for 127.0.0.1, [::1] and localhost; one per test process. */
export function testCert(): TestCert {
  if (made) return made;
  const dir = mkdtempSync(path.join(tmpdir(), "slaude-tls-"));
  try {
    const key = path.join(dir, "key.pem");
    const cert = path.join(dir, "cert.pem");
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost",
        "-keyout",
        key,
        "-out",
        cert,
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    made = { key: readFileSync(key, "utf8"), cert: readFileSync(cert, "utf8") };
    return made;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function bodyOf(body: unknown): string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string") return body;
  if (body instanceof URLSearchParams) return body.toString();
  throw new Error(`trustingFetch: unsupported body type ${typeof body}`);
}

/**
 * A fetch for https URLs that trusts `ca` only (plain http goes to the global fetch). It never
 * follows redirects (the callers under test ask for `manual`) and honours the abort signal.
 */
export function trustingFetch(ca: string): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== "https:") return fetch(input, init);
    const headers = new Headers(init?.headers);
    const body = bodyOf(init?.body);
    return new Promise<Response>((resolve, reject) => {
      const req = request(
        url,
        {
          method: init?.method ?? "GET",
          headers: Object.fromEntries(headers),
          ca,
          ...(init?.signal ? { signal: init.signal } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", reject);
          res.on("end", () => {
            const h = new Headers();
            for (const [k, v] of Object.entries(res.headers))
              if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(", ") : v);
            const status = res.statusCode ?? 500;
            resolve(
              new Response([204, 205, 304].includes(status) ? null : Buffer.concat(chunks), { status, headers: h }),
            );
          });
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  };
}
