import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { LIST, openOn, pgCluster, raw, rebuilds, replica, TOKEN, useMcpReplicas } from "../support/mcp-replicas.js";

// A session is bound to the host token that opened it on every replica (issue 20 item 7): real apps
// on one real PostgreSQL, the session record carrying a keyed digest of the token (migration 0009),
// requests naming the session by id on another replica, as a round-robin load balancer sends them.

useMcpReplicas();

const OTHER = `host-other-${randomBytes(16).toString("hex")}`;
const code = (body: string): unknown =>
  (JSON.parse(body) as { error?: { data?: { error?: string } } }).error?.data?.error;
const as = (token: string) => ({ authorization: `Bearer ${token}` });

describe("MCP sessions and their host token across PostgreSQL replicas", () => {
  it("a session opened on A with one token refuses another valid token on A and on B, before any rebuild; its own token goes on", async () => {
    const url = await pgCluster().createDatabase();
    // OTHER is bound to the session's own team: a valid token of the same tenant is still not the session's.
    const tokens = { SLAUDE_HOST_TOKENS: `${TOKEN},T1:${OTHER}` };
    const a = await replica(url, tokens);
    const b = await replica(url, tokens);
    const { client, id } = await openOn(a);

    for (const app of [b, a]) {
      for (const req of [
        { body: LIST },
        { method: "GET", headers: { accept: "text/event-stream" } },
        { method: "DELETE" },
      ]) {
        const r = await raw(app, id, { ...req, headers: { ...req.headers, ...as(OTHER) } });
        expect(r.status, `${req.method ?? "POST"} on ${app === a ? "A" : "B"}`).toBe(403);
        expect(code(r.body)).toBe("session_token_mismatch");
        expect(r.body).not.toContain(OTHER);
        expect(r.body).not.toContain(TOKEN);
      }
    }
    // B never rebuilt it for the refused token; for the right one it does, once.
    expect(rebuilds(b)).toBe(0);
    expect((await raw(b, id, { body: LIST })).status).toBe(200);
    expect(rebuilds(b)).toBe(1);
    expect((await client.listTools()).tools).toHaveLength(5);

    // The record holds a keyed digest of the token, never the token.
    const db = new URL(url).pathname.slice(1);
    const row = (await pgCluster().superQuery(`SELECT * FROM mcp_sessions WHERE id = '${id}'`, db)).rows[0] as Record<
      string,
      unknown
    >;
    expect(row.token_digest).toMatch(/^k_[0-9a-f]{16}:[0-9a-f]{64}$/);
    expect(JSON.stringify(row)).not.toContain(TOKEN);
  });

  it("a record without a token digest (written before 0009) is served to nobody: 404, so the client re-initializes", async () => {
    const url = await pgCluster().createDatabase();
    const a = await replica(url);
    const b = await replica(url);
    const { id } = await openOn(a);
    await pgCluster().superQuery(
      `UPDATE mcp_sessions SET token_digest = NULL WHERE id = '${id}'`,
      new URL(url).pathname.slice(1),
    );
    for (const app of [a, b]) expect((await raw(app, id, { body: LIST })).status).toBe(404);
    expect(rebuilds(b)).toBe(0);
  });
});
