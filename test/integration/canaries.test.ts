import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cmdlineOf, environOf, envOf, groupMembers, waitFor } from "../support/proc.js";
import { ALICE, BOB, type Harness, makeHarness, mcpCall, THREAD } from "./broker-harness.js";

// Canary secrets (brief §11: "secrets in child env, argv, logs, audit, tool results, error texts").
// A's token is planted in A's vendor child and leaked back on purpose by the fixture; it must come
// back redacted to a borrower, never reach B's child, and never land in logs, audit or the DB file.
// The broker's own secrets (master key, its env) must reach no child at all. Every check has a
// positive control, so a scan that reads nothing cannot pass by accident.

const THREAD2 = { ...THREAD, threadTs: "1700000000.000200" } as unknown as typeof THREAD;
const hex = () => randomBytes(12).toString("hex");

/** Every form of `token` the redactor promises to hide (user is the non-secret companion). */
function forms(token: string, user: string): string[] {
  return [
    token,
    encodeURIComponent(token),
    JSON.stringify(token).slice(1, -1),
    Buffer.from(token).toString("base64"),
    Buffer.from(token).toString("base64url"),
    Buffer.from(`${user}:${token}`).toString("base64"),
    Buffer.from(`${user}:${token}`).toString("base64url"),
  ];
}

function expectNone(haystack: string | Buffer, needles: readonly string[], what: string): void {
  for (const n of needles)
    expect(haystack.includes(n), `${what} contains a canary form ${JSON.stringify(n.slice(0, 12))}…`).toBe(false);
}

describe("canaries across owners", () => {
  const envCanary = `broker-env-canary-${hex()}`;
  // Characters that make the raw, URL-encoded, JSON-escaped and base64 forms all differ.
  const tokenA = `canary-A-${hex()}/+=&é?"`;
  const tokenA2 = `canary-A2-${hex()}`;
  const tokenB = `canary-B-${hex()}`;
  let h: Harness;
  let aConn: string, a2Conn: string, bConn: string;
  let aForms: string[];

  beforeAll(async () => {
    // A broker env var that must never reach a child: set before the broker exists.
    process.env.SLAUDE_TEST_CANARY = envCanary;
    h = await makeHarness();
    aForms = [...forms(tokenA, ALICE), ...forms(tokenA2, ALICE)];
    // THREAD: only A connected; B borrows under a thread grant.
    aConn = (await h.connect(ALICE, { token: tokenA })).connection.id;
    await h.store.grants.create(
      {
        id: "grant_canary",
        connectionId: aConn,
        ...THREAD,
        ownerUserId: ALICE,
        borrowerUserId: BOB,
        service: "vendor",
        createdAt: Date.now(),
      },
      [],
    );
    // THREAD2: A and B each have their own connection.
    a2Conn = (await h.connect(ALICE, { token: tokenA2, thread: THREAD2 })).connection.id;
    bConn = (await h.connect(BOB, { token: tokenB, thread: THREAD2 })).connection.id;
  });
  afterAll(async () => {
    delete process.env.SLAUDE_TEST_CANARY;
    await h?.close();
  });

  async function session(user: string, thread = THREAD) {
    const s = await h.session(thread);
    s.turn.user = user;
    return s;
  }

  it("a borrower's leak_token result has A's token redacted in every form", async () => {
    const s = await session(BOB);
    const r = await mcpCall(s.client, { tool: "leak_token", on_behalf_of: BOB });
    expect(r.structured.ranAs).toBe("grant");
    const lines = r.text.split("\n");
    expect(lines.slice(0, 3)).toEqual(["raw: [redacted]", "basic: [redacted]", "uri: [redacted]"]);
    expectNone(JSON.stringify(r.raw), aForms, "leak_token result");
  });

  it("a borrower's env_dump shows A's credential only as [redacted]", async () => {
    const s = await session(BOB);
    const r = await mcpCall(s.client, { tool: "env_dump", on_behalf_of: BOB });
    expect(r.structured.ranAs).toBe("grant");
    const dump = JSON.parse(r.text.split("\n")[0]!) as { env: Record<string, string>; token: string };
    expect(dump.token).toBe("[redacted]");
    expect(dump.env.VENDOR_TOKEN).toBe("[redacted]");
    expect(dump.env.VENDOR_USER).toBe(ALICE);
    expectNone(JSON.stringify(r.raw), aForms, "env_dump result");
    // Positive control: the child really does hold A's token (so the redaction did the work).
    const pid = h.broker.pool.pidOf(aConn)!;
    expect(envOf(pid).VENDOR_TOKEN).toBe(tokenA);
  });

  it("a vendor error text carrying the token is redacted", async () => {
    const s = await session(BOB);
    const r = await mcpCall(s.client, { tool: "fail_with_token", on_behalf_of: BOB });
    expect(r.isError).toBe(true);
    expect(r.text).toContain("vendor failed while using token [redacted]");
    expectNone(JSON.stringify(r.raw), aForms, "fail_with_token result");
  });

  it("B's own child never holds A's credential; A's child never holds B's", async () => {
    const [sa, sb] = await Promise.all([session(ALICE, THREAD2), session(BOB, THREAD2)]);
    const [ra, rb] = await Promise.all([
      mcpCall(sa.client, { tool: "env_dump", on_behalf_of: ALICE }),
      mcpCall(sb.client, { tool: "env_dump", on_behalf_of: BOB }),
    ]);
    expect(ra.structured.ranAs).toBe("own");
    expect(rb.structured.ranAs).toBe("own");
    expectNone(rb.text, aForms, "B's env_dump");
    expectNone(ra.text, forms(tokenB, BOB), "A's env_dump");
    const pidA = h.broker.pool.pidOf(a2Conn)!;
    const pidB = h.broker.pool.pidOf(bConn)!;
    expect(pidA).not.toBe(pidB);
    // Straight from the kernel, every process of each child's group.
    for (const p of groupMembers(pidB)) expectNone(environOf(p) + cmdlineOf(p), aForms, `B's process ${p}`);
    for (const p of groupMembers(pidA)) expectNone(environOf(p) + cmdlineOf(p), forms(tokenB, BOB), `A's process ${p}`);
    expect(environOf(pidB)).toContain(`VENDOR_TOKEN=${tokenB}`);
    expect(environOf(pidA)).toContain(`VENDOR_TOKEN=${tokenA2}`);
  });

  it("the master key and the broker's environment reach no child, in env or argv; credentials never in argv", async () => {
    const sa = await session(ALICE, THREAD2);
    const g = await mcpCall(sa.client, { tool: "spawn_grandchild", on_behalf_of: ALICE });
    const grandchild = (JSON.parse(g.text.split("\n")[0]!) as { pid: number }).pid;
    const leaders = [aConn, a2Conn, bConn].map((id) => h.broker.pool.pidOf(id));
    expect(leaders.every((p) => typeof p === "number")).toBe(true);
    const procs = leaders.flatMap((p) => groupMembers(p!));
    expect(procs).toContain(grandchild);
    expect(procs.length).toBeGreaterThanOrEqual(4);
    const keyBytes = Buffer.from(h.keyB64, "base64");
    const brokerSecrets = [
      h.keyB64,
      keyBytes.toString("hex"),
      keyBytes.toString("base64url"),
      envCanary,
      "SLAUDE_TEST_CANARY",
    ];
    // Positive control: a child that inherited the broker's environment would be caught by this scan.
    const inheriting = spawn(process.execPath, ["-e", "setTimeout(() => {}, 10000)"], { stdio: "ignore" });
    try {
      expect(await waitFor(() => environOf(inheriting.pid!).includes(envCanary), 5_000)).toBe(true);
    } finally {
      inheriting.kill("SIGKILL");
    }
    for (const p of procs) {
      const environ = environOf(p);
      const cmdline = cmdlineOf(p);
      expect(cmdline.length, `cmdline of ${p} is readable`).toBeGreaterThan(0);
      expect(environ.length, `environ of ${p} is readable`).toBeGreaterThan(0);
      expectNone(environ, brokerSecrets, `environ of ${p}`);
      expectNone(cmdline, [...brokerSecrets, ...aForms, ...forms(tokenB, BOB)], `argv of ${p}`);
    }
    // The leaders' environment is exactly the allowlist plus the registry's credential variables.
    for (const p of leaders)
      expect(Object.keys(envOf(p!)).sort()).toEqual([
        "HOME",
        "LOGNAME",
        "PATH",
        "TMPDIR",
        "USER",
        "VENDOR_TOKEN",
        "VENDOR_USER",
      ]);
  });

  it("no canary in log lines, audit rows or the SQLite file bytes", async () => {
    // Exercise the paths that log and audit: a borrowed leak, an error, a crash.
    const sb = await session(BOB);
    await mcpCall(sb.client, { tool: "leak_token", on_behalf_of: BOB });
    await mcpCall(sb.client, { tool: "fail_with_token", on_behalf_of: BOB });
    const sb2 = await session(BOB, THREAD2);
    const crashed = await mcpCall(sb2.client, { tool: "crash", on_behalf_of: BOB });
    expect(crashed.structured.code).toBe("vendor_crashed");

    const secrets = [...aForms, ...forms(tokenB, BOB), h.keyB64, envCanary];
    const logs = h.log.lines.join("\n");
    expect(logs).toContain(bConn); // positive control: the crash was logged, with its connection id
    expectNone(logs, secrets, "log lines");

    const audit = JSON.stringify(await h.store.audit.query({}));
    expect(audit).toContain(aConn);
    expect(audit).toContain("vendor_crashed");
    expectNone(audit, secrets, "audit rows");

    const dbFile = path.join(h.dir, "slaude.db");
    const bytes = Buffer.concat(
      [dbFile, `${dbFile}-wal`, `${dbFile}-shm`].filter((f) => existsSync(f)).map((f) => readFileSync(f)),
    );
    expect(bytes.includes(aConn)).toBe(true); // positive control: the rows are in what we read
    expect(bytes.includes(bConn)).toBe(true);
    expectNone(bytes, secrets, "SQLite file bytes");
  });
});

describe("result size cap", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await makeHarness({ limits: { maxBytes: 1000, maxLines: 50 } });
    await h.connect(ALICE);
  });
  afterAll(async () => {
    await h?.close();
  });

  it("truncates a flood to the cap with a notice; a result within the cap is untouched", async () => {
    const s = await h.session();
    s.turn.user = ALICE;
    const big = await mcpCall(s.client, { tool: "flood", args: { bytes: 200_000 }, on_behalf_of: ALICE });
    expect(big.structured.status).toBe("ok");
    expect(big.structured.truncated).toBe(true);
    const content = big.raw.content as { type: string; text: string }[];
    // The cut text with its notice, then (issue 15) the note and the resource_link to the full result.
    expect(content.map((c) => c.type)).toEqual(["text", "text", "resource_link"]);
    const [body, notice] = content[0]!.text.split("\n[slaude-connect: result truncated");
    expect(notice).toBeDefined();
    // Past both limits, and the notice says so (issue 21: it names the limits actually hit).
    expect(notice).toMatch(/\d+ bytes exceeded the limit of 1000 bytes, and \d+ lines exceeded the limit of 50 lines/);
    expect(Buffer.byteLength(body!)).toBeLessThanOrEqual(1000);
    expect(body!.split("\n").length).toBeLessThanOrEqual(50);
    expect(body!.startsWith("x".repeat(99))).toBe(true);
    const audit = await h.store.audit.query({ event: "call" });
    expect(audit.at(-1)?.resultBytes).toBeGreaterThanOrEqual(200_000);

    const small = await mcpCall(s.client, { tool: "flood", args: { bytes: 500 }, on_behalf_of: ALICE });
    expect(small.structured.truncated).toBe(false);
    expect((small.raw.content as { text: string }[])[0]!.text).toBe(`${"x".repeat(99)}\n`.repeat(5));
  });
});
