import { describe, expect, it } from "vitest";
import { parseRegistry } from "../../../src/config/registry.js";
import {
  type EndpointRefusal,
  type EndpointSource,
  judgeEndpoint,
  refusalText,
  registryOrigins,
} from "../../../src/login/oauth/endpoint-policy.js";

// The one origin rule for every URL the OAuth client uses (issue 21, findings 1 and 2): a table of
// the cases a reviewer asks about, then invariants checked over every combination of a generated
// set of URLs, sources and modes, against oracles written apart from the implementation.

const configured: EndpointSource = { kind: "configured" };
const from = (u: string, allowedOrigins: string[] = []): EndpointSource => ({
  kind: "discovered",
  from: new URL(u),
  allowedOrigins,
});
const DEV = { production: false };
const PROD = { production: true };

type Row = [
  name: string,
  raw: string,
  source: EndpointSource,
  mode: { production: boolean },
  expected: "ok" | EndpointRefusal,
];

const TABLE: Row[] = [
  ["configured https", "https://auth.example.com/token", configured, PROD, "ok"],
  ["configured loopback http, development", "http://127.0.0.1:8080/token", configured, DEV, "ok"],
  ["configured loopback http, production", "http://127.0.0.1:8080/token", configured, PROD, "http_in_production"],
  ["configured localhost http, production", "http://localhost/token", configured, PROD, "http_in_production"],
  ["configured http to a public host", "http://auth.example.com/token", configured, DEV, "http_not_loopback"],
  ["javascript: link", "javascript:alert(1)", configured, DEV, "scheme"],
  ["data: link", "data:text/html,x", from("https://auth.example.com"), DEV, "scheme"],
  ["not a URL", "/relative/token", configured, DEV, "not_a_url"],
  ["embedded credentials", "https://u:p@auth.example.com/token", configured, DEV, "credentials"],
  // Finding 1: https metadata naming a plain-http loopback service.
  [
    "https issuer names loopback http device endpoint",
    "http://127.0.0.1:9999/internal/admin/device",
    from("https://auth.example.com"),
    DEV,
    "downgrade",
  ],
  [
    "https issuer names loopback http, even if allowed",
    "http://127.0.0.1:9999/x",
    from("https://auth.example.com", ["http://127.0.0.1:9999"]),
    DEV,
    "downgrade",
  ],
  [
    "https issuer names loopback http, production",
    "http://127.0.0.1:9999/x",
    from("https://auth.example.com"),
    PROD,
    "http_in_production",
  ],
  ["same-origin endpoint", "https://auth.example.com/oauth/token", from("https://auth.example.com/tenant"), PROD, "ok"],
  [
    "same origin, explicit default port",
    "https://auth.example.com:443/token",
    from("https://auth.example.com"),
    PROD,
    "ok",
  ],
  [
    "another port is another origin",
    "https://auth.example.com:8443/token",
    from("https://auth.example.com"),
    PROD,
    "foreign_origin",
  ],
  [
    "sibling subdomain, not allowed",
    "https://tokens.example.com/token",
    from("https://auth.example.com"),
    PROD,
    "foreign_origin",
  ],
  ["parent domain, not allowed", "https://example.com/token", from("https://auth.example.com"), PROD, "foreign_origin"],
  [
    "sibling subdomain, allowed",
    "https://tokens.example.com/token",
    from("https://auth.example.com", ["https://tokens.example.com"]),
    PROD,
    "ok",
  ],
  [
    "allowed origin matches exactly, not by suffix",
    "https://tokens.example.com.evil.test/token",
    from("https://auth.example.com", ["https://tokens.example.com"]),
    PROD,
    "foreign_origin",
  ],
  [
    "another site altogether",
    "https://phish.invalid/activate",
    from("https://auth.example.com"),
    PROD,
    "foreign_origin",
  ],
  // Loopback http only when the issuer itself is loopback http, outside production.
  [
    "loopback issuer names its own loopback endpoint",
    "http://127.0.0.1:8080/token",
    from("http://127.0.0.1:8080"),
    DEV,
    "ok",
  ],
  [
    "loopback issuer names another loopback port",
    "http://127.0.0.1:9999/token",
    from("http://127.0.0.1:8080"),
    DEV,
    "foreign_origin",
  ],
  [
    "loopback issuer names its own endpoint, production",
    "http://127.0.0.1:8080/token",
    from("http://127.0.0.1:8080"),
    PROD,
    "http_in_production",
  ],
  [
    "loopback http issuer names https on another origin",
    "https://auth.example.com/token",
    from("http://127.0.0.1:8080"),
    DEV,
    "foreign_origin",
  ],
];

describe("judgeEndpoint: the table", () => {
  it.each(TABLE)("%s", (_name, raw, source, mode, expected) => {
    const v = judgeEndpoint(raw, source, mode);
    expect(v.ok ? "ok" : v.reason).toBe(expected);
  });

  it("says what to do and names the origin, never the path or query", () => {
    const raw = "https://tokens.example.com/t?secret=s3cr3t-canary";
    const text = refusalText("token_endpoint", "foreign_origin", raw, from("https://auth.example.com"));
    expect(text).toContain("https://tokens.example.com");
    expect(text).toContain("https://auth.example.com");
    expect(text).toContain("allowedOrigins");
    expect(text).not.toContain("s3cr3t-canary");
  });
});

// Generated: every URL × source × mode; each accepted URL must satisfy the stated rules.
const HOSTS = [
  "auth.example.com",
  "tokens.example.com",
  "example.com",
  "127.0.0.1",
  "localhost",
  "[::1]",
  "10.0.0.5",
  "phish.invalid",
];
const PORTS = ["", ":8080"];
const SCHEMES = ["https:", "http:", "ftp:", "javascript:"];
const URLS = SCHEMES.flatMap((s) => HOSTS.flatMap((h) => PORTS.map((p) => `${s}//${h}${p}/path`)));
const ANCHORS = ["https://auth.example.com", "http://127.0.0.1:8080", "https://127.0.0.1:8080"];
const ALLOWED = [[], ["https://tokens.example.com"], ["http://localhost:8080", "https://phish.invalid"]];
const SOURCES: EndpointSource[] = [configured, ...ANCHORS.flatMap((a) => ALLOWED.map((al) => from(a, al)))];
const loopbackHosts = new Set(["127.0.0.1", "localhost", "[::1]"]);

describe("judgeEndpoint: invariants over generated cases", () => {
  it(`holds for all ${URLS.length * SOURCES.length * 2} combinations`, () => {
    let accepted = 0;
    for (const raw of URLS) {
      const u = new URL(raw);
      for (const source of SOURCES) {
        for (const mode of [DEV, PROD]) {
          const v = judgeEndpoint(raw, source, mode);
          if (!v.ok) continue;
          accepted++;
          expect(["https:", "http:"]).toContain(u.protocol);
          // Plain http: never in production, only to this machine.
          if (u.protocol === "http:") {
            expect(mode.production).toBe(false);
            expect(loopbackHosts.has(u.hostname)).toBe(true);
          }
          if (source.kind === "discovered") {
            // No downgrade from https metadata.
            if (source.from.protocol === "https:") expect(u.protocol).toBe("https:");
            // On the anchor's own origin or one the registry lists, compared as whole origins.
            const origin = `${u.protocol}//${u.host}`;
            const anchor = `${source.from.protocol}//${source.from.host}`;
            expect(origin === anchor || source.allowedOrigins.includes(origin)).toBe(true);
          }
        }
      }
    }
    // The invariants were not vacuous.
    expect(accepted).toBeGreaterThan(20);
  });
});

describe("registryOrigins: what a stored token endpoint may be on", () => {
  const doc = (
    capture: Record<string, unknown>,
    transport: Record<string, unknown> = { type: "stdio", command: "true", credentialEnv: { T: "{{access_token}}" } },
  ) => parseRegistry({ services: { svc: { transport, capture } } }, "t").get("svc")!.entry;

  it("covers the configured URLs, the discovery anchor and the allowed origins, nothing else", () => {
    expect(
      [
        ...registryOrigins(
          doc({
            strategy: "oauth",
            authorizationUrl: "https://a.example.com/authorize",
            tokenUrl: "https://t.example.com/token",
            clientId: "c",
          }),
        ),
      ].sort(),
    ).toEqual(["https://a.example.com", "https://t.example.com"]);
    const discovered = doc(
      { strategy: "oauth", discovery: true, allowedOrigins: ["https://auth.vendor.example"] },
      { type: "http", url: "https://mcp.vendor.example/mcp" },
    );
    expect([...registryOrigins(discovered)].sort()).toEqual([
      "https://auth.vendor.example",
      "https://mcp.vendor.example",
    ]);
    expect([
      ...registryOrigins(
        doc({ strategy: "device", device: { issuer: "https://idp.example.com/tenant", clientId: "c" } }),
      ),
    ]).toEqual(["https://idp.example.com"]);
    expect(registryOrigins(doc({ strategy: "paste" })).size).toBe(0);
  });

  it("the registry takes bare origins only: no path, no userinfo, http only for loopback", () => {
    const oauth = (allowedOrigins: unknown) => () =>
      doc({ strategy: "oauth", discovery: true, allowedOrigins }, { type: "http", url: "https://mcp.example.com/mcp" });
    for (const ok of [["https://auth.example.com"], ["https://auth.example.com:8443"], ["http://127.0.0.1:8080"], []])
      expect(oauth(ok)).not.toThrow();
    for (const bad of [
      ["https://auth.example.com/"],
      ["https://auth.example.com/path"],
      ["http://auth.example.com"],
      ["https://u@auth.example.com"],
      ["https://Auth.Example.com"],
      ["https://auth.example.com:443"],
      ["auth.example.com"],
      Array.from({ length: 17 }, (_, i) => `https://a${i}.example.com`),
    ]) {
      expect(oauth(bad)).toThrow();
    }
  });
});
