import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { query } from "../../src/console/http.js";

// The console API's query strings: each parameter once, strict, and a parameter's name is only a
// name (one named like an object's own property is refused as unknown, not taken for a repeat).

const schema = z.object({ user: z.string().optional() }).strict();
let server: http.Server;
let base: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const q = query(res, new URL(req.url ?? "/", "http://x"), schema);
    if (q) res.end(JSON.stringify({ ok: q }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

async function get(q: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${base}/?${q}`);
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

describe("console query strings", () => {
  it("a known parameter parses; a repeated one is refused by name", async () => {
    expect(await get("user=U1")).toEqual({ status: 200, body: { ok: { user: "U1" } } });
    const twice = await get("user=U1&user=U2");
    expect(twice.status).toBe(400);
    expect(twice.body).toMatchObject({ error: "invalid_request", message: "Query parameter user is repeated." });
  });

  it("__proto__, toString and constructor are unknown parameters, refused; none is read as a repeat", async () => {
    for (const name of ["__proto__", "toString", "constructor"]) {
      const r = await get(`${name}=1`);
      expect(r.status).toBe(400);
      expect(String(r.body.message)).not.toContain("repeated");
    }
  });
});
