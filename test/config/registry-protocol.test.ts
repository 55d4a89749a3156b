import { describe, expect, it } from "vitest";
import { parseRegistry } from "../../src/config/registry.js";
import { vendorProtocolOf } from "../../src/pool/era.js";

// A registry entry's `protocol` (the MCP era its vendor is spoken to in): three values, validated
// strictly; the default depends on the transport.

const http = (extra: Record<string, unknown> = {}, transport: Record<string, unknown> = {}) => ({
  services: {
    svc: {
      transport: { type: "http", url: "https://mcp.example.com/mcp", ...transport },
      capture: { strategy: "paste" },
      ...extra,
    },
  },
});
const stdio = (extra: Record<string, unknown> = {}) => ({
  services: {
    svc: {
      transport: { type: "stdio", command: "vendor", credentialEnv: { TOKEN: "{{token}}" } },
      capture: { strategy: "paste" },
      ...extra,
    },
  },
});

describe("registry protocol", () => {
  it("defaults to auto for http vendors and to the 2025 handshake for stdio ones", () => {
    expect(vendorProtocolOf(parseRegistry(http(), "t").get("svc")!)).toBe("auto");
    expect(vendorProtocolOf(parseRegistry(stdio(), "t").get("svc")!)).toBe("2025-11-25");
  });

  it("takes each of its three values, on either transport", () => {
    for (const protocol of ["auto", "2025-11-25", "2026-07-28"]) {
      expect(vendorProtocolOf(parseRegistry(http({ protocol }), "t").get("svc")!)).toBe(protocol);
      expect(vendorProtocolOf(parseRegistry(stdio({ protocol }), "t").get("svc")!)).toBe(protocol);
    }
  });

  it("refuses any other value, and 2026-07-28 over the HTTP+SSE transport", () => {
    expect(() => parseRegistry(http({ protocol: "2024-11-05" }), "t")).toThrow(/protocol/);
    expect(() => parseRegistry(http({ protocol: "latest" }), "t")).toThrow(/protocol/);
    expect(() => parseRegistry(http({ protocol: "2026-07-28" }, { protocol: "sse" }), "t")).toThrow(/Streamable HTTP/);
    expect(vendorProtocolOf(parseRegistry(http({ protocol: "auto" }, { protocol: "sse" }), "t").get("svc")!)).toBe(
      "auto",
    );
  });
});
