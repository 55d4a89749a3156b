// A PostgreSQL restart under load (issue 21, item 9): three replicas (`slaude-connect serve`
// processes) on one real PostgreSQL behind a round-robin balancer, four sessions calling through it,
// and one call held in its vendor. The server is restarted as an operator would (fast shutdown,
// then the same data directory on the same port). Every replica lives through it (same pid, no
// uncaught 'error' event); while the server is down /healthz (liveness) answers 200 and /readyz
// 503, and every refused request or call says store_unavailable (503 with Retry-After, or a tool
// refusal), never internal_error; the call whose vendor finished during the outage answers ok only
// after its completion row is written; every replica gets its LISTEN connection back by itself;
// after the restart every call succeeds again, and every call a client saw answered ok has its
// completion row in the shared audit.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { callHash } from "../../src/policy/args-hash.js";
import { mcpCall } from "../integration/broker-harness.js";
import { waitFor } from "../support/proc.js";
import { rawRequest } from "../support/raw-http.js";
import { sessionIdOf } from "../support/replicas.js";
import { ALICE, addConnection, type Cluster, LOADERS, query, startCluster } from "./cluster-story.js";

vi.setConfig({ testTimeout: 150_000, hookTimeout: 180_000 });
/** Calls each session must have answered after the restart (all started after every replica is ready again). */
const AFTER_RESTART = 10;
/** A hard stop for each loader: the load stays bounded whatever happens. */
const MAX_CALLS = 150;

type Phase = "before" | "outage" | "after";

interface Seen {
  readonly phase: Phase;
  readonly args: { text: string };
  readonly ok: boolean;
  /** The refusal code, or the transport error's text (an HTTP answer other than 2xx). */
  readonly failure?: string;
}

let c: Cluster;
beforeAll(async () => {
  c = await startCluster(3);
  await Promise.all([ALICE, ...LOADERS].map((owner) => addConnection(c.set, c.fake.teamId, owner)));
});
afterAll(async () => {
  await c?.stop();
});

async function probe(url: string, p: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${url}${p}`);
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

describe("a PostgreSQL restart under load", () => {
  it("replicas live through it, refuse clearly while it is down, recover, and leave no acknowledged call without its completion row", async () => {
    let phase: Phase = "before";
    const seen: Seen[] = [];
    const pids = c.set.replicas.map((r) => r.pid);
    const loaders = await Promise.all(
      LOADERS.map(async (user, i) => {
        await c.set.turn(c.thread(i + 1), user);
        return { user, client: await c.set.session(c.thread(i + 1)), okAfter: 0 };
      }),
    );
    const count = (p: Phase, ok: boolean): number => seen.filter((s) => s.phase === p && s.ok === ok).length;
    const loads = loaders.map(async (l, i) => {
      for (let n = 0; n < MAX_CALLS && l.okAfter < AFTER_RESTART; n++) {
        const args = { text: `r${i}-${n}` };
        const at = phase;
        try {
          const r = await mcpCall(
            l.client,
            { service: "stubborn", tool: "echo", args, on_behalf_of: l.user },
            { timeout: 60_000 },
          );
          const ok = r.structured.status === "ok";
          seen.push({ phase: at, args, ok, ...(ok ? {} : { failure: `${r.structured.code}: ${r.text}` }) });
          if (ok && at === "after") l.okAfter++;
        } catch (e) {
          seen.push({ phase: at, args, ok: false, failure: String(e) });
        }
        // A refused caller retries after a pause, as the refusal asks; the load stays a few calls a second.
        if (seen.at(-1)?.ok === false) await new Promise((r) => setTimeout(r, 150));
      }
    });

    // One call held in its vendor across the outage: it finishes while the database is down.
    const gate = path.join(c.set.root, "gate");
    const aliceThread = c.thread(20);
    await c.set.turn(aliceThread, ALICE);
    const alice = await c.set.session(aliceThread);
    const held = mcpCall(
      alice,
      { service: "stubborn", tool: "wait_for_file", args: { path: gate }, on_behalf_of: ALICE },
      { timeout: 90_000 },
    );
    const heldStarted = async (): Promise<boolean> =>
      (
        await query<{ n: number }>(
          c.set,
          "SELECT count(*)::int AS n FROM audit WHERE event = 'call_started' AND tool = 'wait_for_file'",
        )
      )[0]!.n === 1;
    await vi.waitFor(async () => expect(await heldStarted()).toBe(true), { timeout: 30_000, interval: 50 });
    const warmed = await waitFor(() => count("before", true) >= 60, 60_000, 20);
    expect(warmed, `calls answered before the restart: ${count("before", true)}`).toBe(true);

    const sid = sessionIdOf(loaders[0]!.client)!;
    const during: {
      healthz: number[];
      readyz: { status: number; body: Record<string, unknown> }[];
      mcp: { status: number; retryAfter: string | undefined; body: string }[];
      turns: { status: number; body: string }[];
    } = { healthz: [], readyz: [], mcp: [], turns: [] };
    await c.pg.restart(async () => {
      phase = "outage";
      for (const r of c.set.replicas) {
        during.healthz.push((await fetch(`${r.url}/healthz`)).status);
        during.readyz.push(await probe(r.url, "/readyz"));
        const m = await rawRequest(r.port, {
          method: "POST",
          path: "/mcp",
          headers: {
            accept: "application/json, text/event-stream",
            authorization: `Bearer ${c.set.hostToken}`,
            "mcp-session-id": sid,
          },
          body: { jsonrpc: "2.0", id: 1, method: "tools/list" },
        });
        during.mcp.push({ status: m.status, retryAfter: m.headers["retry-after"] as string | undefined, body: m.body });
        const t = await rawRequest(r.port, {
          method: "POST",
          path: "/v1/turns",
          headers: { authorization: `Bearer ${c.set.hostToken}`, "content-type": "application/json" },
          body: { team_id: c.fake.teamId, channel_id: "C0REPLICA", thread_ts: "1700000099.000100", user_id: ALICE },
        });
        during.turns.push({ status: t.status, body: t.body });
      }
      // Every session has been refused at least once while the server is away.
      const refusedAll = await waitFor(
        () => seen.filter((s) => s.phase === "outage" && !s.ok).length >= loaders.length * 5,
        30_000,
        20,
      );
      expect(refusedAll, "calls refused during the outage").toBe(true);
      // Every replica has lost its LISTEN connection and is trying to get it back.
      const retrying = await waitFor(
        () => c.set.replicas.every((r) => r.log().includes("cluster signals: cannot LISTEN, retrying")),
        30_000,
        20,
      );
      expect(retrying, "every replica retries its LISTEN connection").toBe(true);
      // The held call's vendor answers now, last in the outage: its completion row cannot be written,
      // so it is queued, and the call waits for it (at most the backlog's 20 s) only while the
      // server starts again, however long the checks above took on a loaded machine.
      writeFileSync(gate, "");
      const queued = await waitFor(
        () => c.set.replicas.some((r) => r.log().includes("audit row queued: the database is unavailable")),
        30_000,
        20,
      );
      expect(queued, "the held call's completion row was queued").toBe(true);
    });

    // Back: every replica reconnects by itself and is ready again; only then are calls counted as "after".
    for (const r of c.set.replicas)
      await vi.waitFor(async () => expect((await probe(r.url, "/readyz")).status).toBe(200), {
        timeout: 60_000,
        interval: 100,
      });
    const relistened = await waitFor(
      () => c.set.replicas.every((r) => r.log().includes("cluster signals: listening again")),
      60_000,
      50,
    );
    expect(relistened, "every replica LISTENs again").toBe(true);
    phase = "after";
    const heldAnswer = await held;
    await Promise.all(loads);

    // Alive throughout: the same processes, none ended by an uncaught 'error' event.
    expect(c.set.replicas.map((r) => r.alive)).toEqual([true, true, true]);
    expect(c.set.replicas.map((r) => r.pid)).toEqual(pids);
    for (const r of c.set.replicas) expect(r.log()).not.toMatch(/Unhandled 'error' event|uncaught/i);

    // While down: liveness 200, readiness 503 naming the database, requests 503 store_unavailable with a retry hint.
    expect(during.healthz).toEqual([200, 200, 200]);
    for (const r of during.readyz)
      expect(r).toMatchObject({ status: 503, body: { status: "not_ready", database: "unavailable" } });
    for (const m of during.mcp) {
      expect(m.status).toBe(503);
      expect(m.retryAfter).toBe("5");
      expect(JSON.parse(m.body)).toMatchObject({
        jsonrpc: "2.0",
        error: { code: -32000, data: { code: "store_unavailable", retryAfterSeconds: 5 } },
      });
    }
    for (const t of during.turns) {
      expect(t.status).toBe(503);
      expect(JSON.parse(t.body)).toMatchObject({ error: "store_unavailable" });
    }

    // Every failure, whenever it happened, says store_unavailable: never internal_error or a 500.
    const failures = seen.filter((s) => !s.ok);
    expect(failures.length).toBeGreaterThan(0);
    for (const f of failures) {
      expect(f.phase, f.failure).not.toBe("after");
      expect(f.failure).toContain("store_unavailable");
      expect(f.failure).not.toMatch(/internal_error|HTTP 500/);
    }
    for (const l of loaders) expect(l.okAfter).toBe(AFTER_RESTART);

    // The held call: its vendor ran during the outage, and it answered ok once its completion row was written.
    expect(heldAnswer.structured, heldAnswer.text).toMatchObject({ status: "ok" });
    expect(heldAnswer.text).toContain("released");
    expect(c.set.replicas.some((r) => r.log().includes("audit row written after the database came back"))).toBe(true);

    // Every call a client saw answered ok has its completion row in the shared audit.
    const rows = await query<{ args_hash: string; tool: string }>(
      c.set,
      "SELECT args_hash, tool FROM audit WHERE event = 'call'",
    );
    const hashes = new Set(rows.map((r) => r.args_hash));
    const acknowledged = seen.filter((s) => s.ok).map((s) => s.args);
    expect(acknowledged.filter((a) => !hashes.has(callHash("stubborn", "echo", a)))).toEqual([]);
    expect(hashes.has(callHash("stubborn", "wait_for_file", { path: gate }))).toBe(true);
    console.log(
      `pg-restart: ${acknowledged.length} calls acknowledged, ${failures.length} refused as store_unavailable (${count("outage", false)} during the outage)`,
    );
    for (const cl of [...loaders.map((l) => l.client), alice]) await cl.close().catch(() => {});
  });
});
