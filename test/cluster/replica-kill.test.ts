// kill -9 of one replica under load (issue 14, "How it is proven"): three replicas on one real
// PostgreSQL behind a round-robin balancer, four sessions calling through it and a borrow waiting
// for approval. The replica holding the waiting call is SIGKILLed: the sessions carry on through
// the others under the same session ids, every call started after the kill succeeds without the
// client retrying, no acknowledged call is missing from the audit, the waiting call fails cleanly,
// and the restarted replica kills the (SIGTERM-deaf) vendor children its previous life left.

import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { callHash } from "../../src/policy/args-hash.js";
import { mcpCall } from "../integration/broker-harness.js";
import { descendsFrom, waitDead, waitFor } from "../support/proc.js";
import { approvalCard, sessionIdOf } from "../support/replicas.js";
import {
  ALICE,
  addConnection,
  BOB,
  type Cluster,
  LOADERS,
  query,
  startCluster,
  vendorsUnder,
} from "./cluster-story.js";

vi.setConfig({ testTimeout: 150_000, hookTimeout: 180_000 });
/** Calls each session must have answered after the kill (all started after it). */
const AFTER_KILL = 8;
/** A hard stop for each loader, so a broken build cannot loop for ever. */
const MAX_CALLS = 200;

let c: Cluster;
beforeAll(async () => {
  c = await startCluster(3);
  await Promise.all([ALICE, ...LOADERS].map((owner) => addConnection(c.set, c.fake.teamId, owner)));
});
afterAll(async () => {
  await c?.stop();
});

interface Loader {
  readonly user: string;
  readonly client: Client;
  readonly sid: string | undefined;
  /** The call in flight, and whether it started before the kill (only those may fail). */
  current: { readonly abort: AbortController; readonly beforeKill: boolean } | undefined;
  okBefore: number;
  okAfter: number;
  failedAfter: string[];
}

describe("kill -9 of one replica under load", () => {
  it("the harness: a SIGKILLed replica leaves the rotation at once, the others answer every request, and its restart kills the vendors it orphaned", async () => {
    const victim = c.set.replicas[2]!;
    const owner = LOADERS[3];
    await c.set.turn(c.thread(30), owner, victim.url);
    const direct = await c.set.session(c.thread(30), victim.url);
    const r = await mcpCall(direct, {
      service: "stubborn",
      tool: "echo",
      args: { text: "before" },
      on_behalf_of: owner,
    });
    expect(r.structured, r.text).toMatchObject({ status: "ok" });
    const oldPid = victim.pid;
    expect((await victim.kill("SIGKILL")).signal).toBe("SIGKILL");
    await direct.close().catch(() => {});
    const survivors = vendorsUnder(victim.dataDir);
    expect(survivors.length).toBeGreaterThan(0);
    const from = c.set.proxy.routes.length;
    for (let i = 0; i < 9; i++) expect((await fetch(`${c.set.proxy.url}/healthz`)).status).toBe(200);
    expect(new Set(c.set.proxy.routes.slice(from).map((x) => x.backend))).toEqual(new Set([0, 1]));
    await victim.restart();
    expect(victim.pid).not.toBe(oldPid);
    expect(await waitDead(survivors, 10_000)).toEqual([]);
    const back = c.set.proxy.routes.length;
    for (let i = 0; i < 3; i++) expect((await fetch(`${c.set.proxy.url}/healthz`)).status).toBe(200);
    expect(c.set.proxy.routes.slice(back).map((x) => x.backend)).toContain(2);
  });

  it("sessions carry on through the others under the same ids; acknowledged calls are all audited; the waiting call fails cleanly; the restart cleans up", async () => {
    let killed = false;
    const acknowledged: Record<string, unknown>[] = [];
    const watch = (client: Client, onBroken: () => void): void => {
      // A POST stream cut by the dead replica only reaches the client as a transport error.
      client.onerror = (e) => {
        if (String(e).includes("SSE stream disconnected")) onBroken();
      };
    };
    const loaders: Loader[] = await Promise.all(
      LOADERS.map(async (user, i) => {
        await c.set.turn(c.thread(i + 1), user);
        const client = await c.set.session(c.thread(i + 1));
        const l: Loader = {
          user,
          client,
          sid: sessionIdOf(client),
          current: undefined,
          okBefore: 0,
          okAfter: 0,
          failedAfter: [],
        };
        watch(client, () => l.current?.beforeKill && l.current.abort.abort());
        return l;
      }),
    );

    // BOB borrows ALICE's connection: the call waits for her click on one replica.
    const borrowThread = c.thread(9);
    await c.set.turn(borrowThread, ALICE);
    await c.set.turn(borrowThread, BOB);
    const bob = await c.set.session(borrowThread);
    const borrowAbort = new AbortController();
    watch(bob, () => borrowAbort.abort());
    const borrow = mcpCall(
      bob,
      { service: "stubborn", tool: "read_item", args: { id: "waiting" }, on_behalf_of: BOB },
      { signal: borrowAbort.signal, timeout: 120_000 },
    ).then(
      (r) => ({ settled: r.structured.status === "ok" ? ("ok" as const) : ("refused" as const), r }),
      (e: unknown) => ({ settled: "failed" as const, e }),
    );
    await approvalCard(c.fake, ALICE, 0);
    const victim =
      c.set.replicas[
        c.set.proxy.routes.filter((r) => r.sessionId === sessionIdOf(bob) && r.rpcMethod === "tools/call").at(-1)!
          .backend
      ]!;

    const loads = loaders.map(async (l, i) => {
      for (let n = 0; n < MAX_CALLS && l.okAfter < AFTER_KILL; n++) {
        const args = { text: `k${i}-${n}` };
        const cur = { abort: new AbortController(), beforeKill: !killed };
        l.current = cur;
        try {
          const r = await mcpCall(
            l.client,
            { service: "stubborn", tool: "echo", args, on_behalf_of: l.user },
            { signal: cur.abort.signal, timeout: 60_000 },
          );
          if (r.structured.status === "ok") {
            acknowledged.push(args);
            if (cur.beforeKill) l.okBefore++;
            else l.okAfter++;
          } else if (!cur.beforeKill) l.failedAfter.push(`${r.structured.code}: ${r.text}`);
        } catch (e) {
          if (!cur.beforeKill) l.failedAfter.push(String(e));
        }
      }
    });

    // Load until every session has calls answered and the victim runs vendors, then SIGKILL it.
    const warmed = await waitFor(
      () => loaders.every((l) => l.okBefore >= 5) && vendorsUnder(victim.dataDir).length > 0,
      60_000,
      50,
    );
    expect(warmed, `loaders answered: ${loaders.map((l) => l.okBefore).join(",")}`).toBe(true);
    killed = true;
    const exit = await victim.kill("SIGKILL");
    expect(exit.signal).toBe("SIGKILL");
    await Promise.all(loads);

    for (const l of loaders) {
      expect(l.failedAfter, `${l.user}: calls started after the kill`).toEqual([]);
      expect(l.okAfter).toBe(AFTER_KILL);
      expect(sessionIdOf(l.client)).toBe(l.sid);
    }
    // The waiting call was on the dead replica: it fails, promptly and without a result.
    const settled = await borrow;
    expect(settled.settled).toBe("failed");

    // Every call the clients saw answered is in the shared audit.
    const hashes = new Set(
      (await query<{ args_hash: string }>(c.set, "SELECT args_hash FROM audit WHERE event = 'call'")).map(
        (r) => r.args_hash,
      ),
    );
    const missing = acknowledged.filter((a) => !hashes.has(callHash("stubborn", "echo", a)));
    expect(missing).toEqual([]);

    // The SIGTERM-deaf vendors outlived the dead replica; its restart kills them from its ledger.
    const survivors = vendorsUnder(victim.dataDir);
    expect(survivors.length).toBeGreaterThan(0);
    await victim.restart();
    expect(await waitDead(survivors, 10_000)).toEqual([]);
    expect(vendorsUnder(victim.dataDir).filter((p) => !descendsFrom(p, victim.pid))).toEqual([]);
    console.log(
      `replica-kill: ${acknowledged.length} calls acknowledged, ${survivors.length} orphaned vendors cleaned up`,
    );
    for (const cl of [...loaders.map((l) => l.client), bob]) await cl.close().catch(() => {});
  });
});
