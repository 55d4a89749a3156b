import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startV2RemoteVendor, type V2RemoteVendor } from "../fixtures/v2-remote-vendor.js";
import { ALICE, type Harness, makeHarness, mcpCall } from "./broker-harness.js";

// Issue 22 (vendor side) through the broker: a remote vendor on the MCP SDK v2 that serves only
// 2026-07-28 is reached with the default `auto`, and the era it speaks shows in mcp_describe; the
// same vendor under `protocol: "2025-11-25"` is refused as vendor_incompatible (the versions named,
// the operator told how to set protocol), audited, and never backed off.

const paste = { strategy: "paste", fields: [{ name: "token", label: "Token" }] };
const bearer = { name: "Authorization", value: "Bearer {{token}}" };
const TOKEN = "vendor-eras-alice";

describe("vendors of the 2026-07-28 era through the broker", () => {
  let modern: V2RemoteVendor;
  let h: Harness;

  beforeAll(async () => {
    modern = await startV2RemoteVendor({ eras: "modern", tokens: { [TOKEN]: "alice-modern" } });
    const svc = (protocol?: string) => ({
      transport: { type: "http", url: modern.url, credentialHeader: bearer },
      ...(protocol ? { protocol } : {}),
      capture: paste,
      tools: { whoami: ["borrowable", "read"] },
    });
    h = await makeHarness({ registryDoc: { services: { modern: svc(), pinned_old: svc("2025-11-25") } } });
  });
  afterAll(async () => {
    await h?.close();
    await modern?.close();
  });

  async function setup(service: string) {
    const { connection } = await h.connect(ALICE, { service, token: TOKEN });
    const s = await h.session();
    s.turn.user = ALICE;
    const call = () => mcpCall(s.client, { service, tool: "whoami", on_behalf_of: ALICE });
    const describe = async () => {
      const r = await s.client.callTool({ name: "mcp_describe", arguments: { service } });
      return {
        structured: r.structuredContent as Record<string, unknown>,
        text: (r.content as { text?: string }[]).map((c) => c.text ?? "").join("\n"),
      };
    };
    return { connection, call, describe };
  }

  it("reaches a 2026-07-28-only vendor with auto, and mcp_describe shows the era it speaks", async () => {
    const { call, describe } = await setup("modern");
    const r = await call();
    expect(r.structured.status).toBe("ok");
    expect(r.text.split("\n")[0]).toBe("alice-modern");
    const d = await describe();
    expect(d.structured.protocol).toEqual({
      version: "2026-07-28",
      era: "modern",
      setting: "auto",
      seenAt: new Date(h.clock.now()).toISOString(),
    });
    expect(d.text).toContain('Its vendor speaks MCP 2026-07-28 (stateless, server/discover; protocol setting "auto").');
  });

  it("refuses a version mismatch as vendor_incompatible: versions named, how to fix it, an audit row, no backoff", async () => {
    const { connection, call, describe } = await setup("pinned_old");
    const r = await call();
    expect(r.structured.code).toBe("vendor_incompatible");
    expect(r.text).toContain("asked for 2025-11-25; the vendor speaks 2026-07-28");
    expect(r.text).toContain('sets "protocol" in the service\'s registry entry');
    expect(r.text).not.toContain("cannot be reached");
    const rows = await h.store.audit.query({ connectionId: connection.id, event: "call" });
    expect(rows.map((row) => row.errorCode)).toContain("vendor_incompatible");
    const d = await describe();
    expect(d.structured.unavailable).toEqual([
      {
        kind: "connection",
        connectionId: connection.id,
        reason: "incompatible",
        since: new Date(h.clock.now()).toISOString(),
        lastError: "asked for 2025-11-25; the vendor speaks 2026-07-28",
      },
    ]);
    expect(d.text).toContain("it speaks another MCP protocol version");
    // No backoff: the next call asks the vendor again at once, on the same clock.
    const before = modern.requests.length;
    expect((await call()).structured.code).toBe("vendor_incompatible");
    expect(modern.requests.length).toBeGreaterThan(before);
  });
});
