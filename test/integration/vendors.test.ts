import { randomBytes } from "node:crypto";
import { createServer as createHttpServer } from "node:http";
import {
  type AddressInfo,
  createServer as createTcpServer,
  type Server,
  type Socket,
  connect as tcpConnect,
} from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeGitlab, startFakeGitlab } from "../fixtures/fake-gitlab-api.js";
import { SERVER_GITLAB_BIN } from "../fixtures/paths.js";
import { type RemoteVendor, startRemoteVendor } from "../fixtures/remote-vendor.js";
import { envOf } from "../support/proc.js";
import { ALICE, BOB, type Harness, makeHarness, mcpCall } from "./broker-harness.js";

// Real vendors behind the broker: the real @modelcontextprotocol/server-gitlab as a stdio child
// against a fake GitLab API on loopback, and remote MCP servers over Streamable HTTP and SSE,
// each reached with the calling owner's credential and nobody else's. An unreachable remote
// backs off (1 min, then 2 min) on the injected clock.

const paste = {
  strategy: "paste",
  fields: [
    { name: "token", label: "Token" },
    { name: "user", label: "User", secret: false },
  ],
};
const bearer = { name: "Authorization", value: "Bearer {{token}}" };
const tok = (who: string) => `${who}-${randomBytes(10).toString("hex")}`;

/** A port on 127.0.0.1 with nothing listening (bound once, then released). */
async function closedPort(): Promise<number> {
  const s = createHttpServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A TCP relay from `port` on 127.0.0.1 to `target`: the unreachable vendor coming back. */
async function relay(port: number, target: string): Promise<{ close(): Promise<void> }> {
  const to = new URL(target);
  const sockets = new Set<Socket>();
  const server: Server = createTcpServer((sock) => {
    const up = tcpConnect(Number(to.port), to.hostname);
    for (const s of [sock, up]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    }
    sock.pipe(up).pipe(sock);
    sock.on("error", () => up.destroy());
    up.on("error", () => sock.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  return {
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe("third-party and remote vendors", () => {
  const glA = tok("glpat-alice");
  const glB = tok("glpat-bob");
  const rA = tok("remote-alice");
  const rB = tok("remote-bob");
  let gitlab: FakeGitlab;
  let remote: RemoteVendor;
  let sseOnly: RemoteVendor;
  let downPort: number;
  let h: Harness;
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    gitlab = await startFakeGitlab({ tokens: { [glA]: "alice", [glB]: "bob" } });
    remote = await startRemoteVendor({ tokens: { [rA]: "alice-remote", [rB]: "bob-remote" } });
    sseOnly = await startRemoteVendor({ tokens: { [rA]: "alice-sse" }, streamable: false, sse: true });
    downPort = await closedPort();
    h = await makeHarness({
      registryDoc: {
        services: {
          gitlab: {
            transport: {
              type: "stdio",
              command: process.execPath,
              args: [SERVER_GITLAB_BIN],
              env: { GITLAB_API_URL: gitlab.apiUrl },
              credentialEnv: { GITLAB_PERSONAL_ACCESS_TOKEN: "{{token}}" },
            },
            capture: paste,
            tools: {
              search_repositories: ["borrowable", "read"],
              get_file_contents: ["borrowable", "read"],
              create_issue: ["borrowable", "write"],
            },
          },
          remote: {
            transport: { type: "http", url: remote.url, credentialHeader: bearer },
            capture: paste,
            tools: { whoami: ["borrowable", "read"] },
          },
          remote_sse: {
            transport: { type: "http", url: sseOnly.sseUrl, credentialHeader: bearer },
            capture: paste,
            tools: { whoami: ["borrowable", "read"] },
          },
          remote_down: {
            transport: { type: "http", url: `http://127.0.0.1:${downPort}/mcp`, credentialHeader: bearer },
            capture: paste,
            tools: { whoami: ["borrowable", "read"] },
          },
        },
      },
    });
  });
  afterAll(async () => {
    await h?.close();
    for (const c of cleanups) await c();
    await Promise.all([gitlab?.close(), remote?.close(), sseOnly?.close()]);
  });

  async function session(user: string) {
    const s = await h.session();
    s.turn.user = user;
    return s;
  }

  it("server-gitlab runs each call with the calling owner's token and only theirs", async () => {
    const a = await h.connect(ALICE, { service: "gitlab", token: glA });
    const b = await h.connect(BOB, { service: "gitlab", token: glB });
    const [sa, sb] = await Promise.all([session(ALICE), session(BOB)]);

    let seen = gitlab.requests.length;
    const newRequests = () => {
      const r = gitlab.requests.slice(seen);
      seen = gitlab.requests.length;
      return r;
    };

    const ra = await mcpCall(sa.client, {
      service: "gitlab",
      tool: "search_repositories",
      args: { search: "widgets" },
      on_behalf_of: ALICE,
    });
    expect(ra.structured.status).toBe("ok");
    expect(ra.structured.ranAs).toBe("own");
    expect(ra.text).toContain("acme/widgets");
    const reqA = newRequests();
    expect(reqA.length).toBeGreaterThan(0);
    expect(reqA.map((r) => r.path)).toContain("/api/v4/projects");
    expect(new Set(reqA.map((r) => r.token))).toEqual(new Set([glA]));

    const rb = await mcpCall(sb.client, {
      service: "gitlab",
      tool: "get_file_contents",
      args: { project_id: "acme/widgets", file_path: "README.md" },
      on_behalf_of: BOB,
    });
    expect(rb.structured.status).toBe("ok");
    expect(rb.text).toContain("Hello from the fake GitLab.");
    const reqB = newRequests();
    expect(reqB.length).toBeGreaterThan(0);
    expect(new Set(reqB.map((r) => r.token))).toEqual(new Set([glB]));

    // Concurrently, on the two live children: each request carries its own caller's token.
    const [ca, cb] = await Promise.all([
      mcpCall(sa.client, {
        service: "gitlab",
        tool: "get_file_contents",
        args: { project_id: "42", file_path: "README.md", ref: "alice-ref" },
        on_behalf_of: ALICE,
      }),
      mcpCall(sb.client, {
        service: "gitlab",
        tool: "get_file_contents",
        args: { project_id: "42", file_path: "README.md", ref: "bob-ref" },
        on_behalf_of: BOB,
      }),
    ]);
    expect(ca.structured.status).toBe("ok");
    expect(cb.structured.status).toBe("ok");
    const both = newRequests();
    expect(both.filter((r) => r.query.includes("alice-ref")).map((r) => r.token)).toEqual([glA]);
    expect(both.filter((r) => r.query.includes("bob-ref")).map((r) => r.token)).toEqual([glB]);

    // Two children, each holding only its owner's token.
    const pa = h.broker.pool.pidOf(a.connection.id)!;
    const pb = h.broker.pool.pidOf(b.connection.id)!;
    expect(pa).not.toBe(pb);
    expect(envOf(pa).GITLAB_PERSONAL_ACCESS_TOKEN).toBe(glA);
    expect(envOf(pb).GITLAB_PERSONAL_ACCESS_TOKEN).toBe(glB);
    expect(envOf(pa).GITLAB_API_URL).toBe(gitlab.apiUrl);

    // The vendor's real tool list was cached on first start: describe serves it without spawning.
    const d = await sa.client.callTool({
      name: "mcp_describe",
      arguments: { service: "gitlab", query: "file contents" },
    });
    const described = d.structuredContent as { source: string; tools: { name: string }[] };
    expect(described.source).toBe("cache");
    expect(described.tools[0]?.name).toBe("get_file_contents");
  });

  it("a remote vendor over Streamable HTTP gets each owner's credential header", async () => {
    await h.connect(ALICE, { service: "remote", token: rA });
    await h.connect(BOB, { service: "remote", token: rB });
    const [sa, sb] = await Promise.all([session(ALICE), session(BOB)]);
    const ra = await mcpCall(sa.client, { service: "remote", tool: "whoami", on_behalf_of: ALICE });
    const rb = await mcpCall(sb.client, { service: "remote", tool: "whoami", on_behalf_of: BOB });
    expect(ra.structured.ranAs).toBe("own");
    expect(ra.text.split("\n")[0]).toBe("alice-remote");
    expect(rb.text.split("\n")[0]).toBe("bob-remote");
    expect(remote.requests.length).toBeGreaterThan(0);
    expect(remote.requests.every((r) => r.path === "/mcp")).toBe(true);
    expect(new Set(remote.requests.map((r) => r.authorization))).toEqual(new Set([`Bearer ${rA}`, `Bearer ${rB}`]));
  });

  it("falls back to SSE when the server does not speak Streamable HTTP", async () => {
    await h.connect(ALICE, { service: "remote_sse", token: rA });
    const s = await session(ALICE);
    const r = await mcpCall(s.client, { service: "remote_sse", tool: "whoami", on_behalf_of: ALICE });
    expect(r.structured.status).toBe("ok");
    expect(r.text.split("\n")[0]).toBe("alice-sse");
    const seq = sseOnly.requests.map((q) => `${q.method} ${q.path}`);
    // The Streamable HTTP attempt (answered 404) came first, then the SSE stream and its messages.
    expect(seq[0]).toBe("POST /sse");
    expect(seq).toContain("GET /sse");
    expect(seq).toContain("POST /messages");
    expect(sseOnly.requests.every((q) => q.authorization === `Bearer ${rA}`)).toBe(true);
  });

  it("an unreachable remote: vendor_unreachable, then vendor_backoff; retries after 1 min, then backs off 2 min", async () => {
    const { connection } = await h.connect(ALICE, { service: "remote_down", token: rA });
    const s = await session(ALICE);
    const call = () => mcpCall(s.client, { service: "remote_down", tool: "whoami", on_behalf_of: ALICE });
    const iso = (ms: number) => new Date(ms).toISOString();
    const listed = async () => {
      const r = await s.client.callTool({ name: "connections_list", arguments: {} });
      return (r.structuredContent as { connections: { id: string; unreachableUntil?: string }[] }).connections.find(
        (c) => c.id === connection.id,
      );
    };
    const attempts = () =>
      h.log.lines.filter((l) => l.includes("remote vendor connect failed") && l.includes(connection.id)).length;

    const t1 = h.clock.now();
    const first = await call();
    expect(first.structured.code).toBe("vendor_unreachable");
    expect(first.text).toContain(iso(t1 + 60_000));
    expect(attempts()).toBe(1);

    const second = await call();
    expect(second.structured.code).toBe("vendor_backoff");
    expect(second.text).toContain(iso(t1 + 60_000));
    expect(attempts()).toBe(1);
    expect((await listed())?.unreachableUntil).toBe(iso(t1 + 60_000));

    h.clock.advance(60_001);
    const t2 = h.clock.now();
    const third = await call();
    expect(third.structured.code).toBe("vendor_unreachable");
    expect(attempts()).toBe(2);
    // Doubled: the next attempt is 2 min after this one.
    expect(third.text).toContain(iso(t2 + 120_000));
    expect((await listed())?.unreachableUntil).toBe(iso(t2 + 120_000));
    expect((await call()).structured.code).toBe("vendor_backoff");
    h.clock.advance(60_000);
    expect((await call()).structured.code).toBe("vendor_backoff");
    expect(attempts()).toBe(2);

    // The vendor comes back on that port: after the backoff the call goes through and the backoff clears.
    const back = await relay(downPort, remote.url);
    cleanups.push(() => back.close());
    h.clock.advance(60_001);
    const fourth = await call();
    expect(fourth.structured.status).toBe("ok");
    expect(fourth.text.split("\n")[0]).toBe("alice-remote");
    expect((await listed())?.unreachableUntil).toBeUndefined();
  });
});
