import { type CallToolResult, McpError } from "@modelcontextprotocol/sdk/types.js";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALICE, BOB, CAROL, type Harness, makeHarness, mcpCall } from "../integration/broker-harness.js";

// Hostile inputs (brief §11: "the model forges on_behalf_of, invents a service or tool, passes
// hostile arguments"): arbitrary JSON for every argument of every broker tool, through a real MCP
// client. Huge strings (up to 100 KB), deep nesting, any unicode, prototype-pollution keys. The
// broker never crashes (the session keeps answering and a legit call still works afterwards),
// never returns ALICE's canary token (raw or in a derived form), and always answers with a schema
// validation error or a structured result or refusal.

const RUNS = 300;
const BROKER_TOOLS = ["mcp_call", "mcp_describe", "connect", "connections_list", "connections_revoke"] as const;
/** Fixture tools that are safe to run hundreds of times (no crash, hang, grandchild or flood). */
const VENDOR_TOOLS = [
  "echo",
  "read_item",
  "write_item",
  "env_dump",
  "leak_token",
  "fail_with_token",
  "whoami_personal",
  "search_shared",
  "not_a_tool",
] as const;
const STATUSES = new Set(["ok", "refused", "needs_connect", "not_available", "consent_sent"]);
const POLLUTION_KEYS = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "__defineGetter__",
  "valueOf",
] as const;

const TOKEN_A = `canary-${"a1".repeat(6)}-${Date.now().toString(36)}`;
/** Every form of ALICE's credential the vendor can produce (leak_token prints raw, basic and URI forms). */
const FORBIDDEN = [
  TOKEN_A,
  Buffer.from(`${ALICE}:${TOKEN_A}`).toString("base64"),
  Buffer.from(TOKEN_A).toString("base64"),
  encodeURIComponent(TOKEN_A),
];

// ---- Hostile values. Everything goes through JSON text, as on a real wire, so "__proto__" is an own key. ----

const hugeString = fc
  .tuple(
    fc.integer({ min: 1_000, max: 100_000 }),
    fc.constantFrom("A", "é", "😀", "\u0000", "\u202e", "<@U0>", "\\", '"', "\n"),
  )
  .map(([n, ch]) => ch.repeat(Math.ceil(n / ch.length)).slice(0, n));
const weirdString = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  // biome-ignore-start lint/suspicious/noTemplateCurlyInString: a template-injection probe, meant as a plain string
  fc.constantFrom(
    "",
    " ",
    "vendor",
    "VENDOR",
    "vendor\u0000",
    "vendor ",
    "../vendor",
    "UALICE01",
    "UALICE01 ",
    "ualice01",
    "*",
    "%s%n",
    "${7*7}",
    "{{token}}",
    "null",
    "undefined",
  ),
  // biome-ignore-end lint/suspicious/noTemplateCurlyInString: a template-injection probe, meant as a plain string
  fc.constantFrom(...POLLUTION_KEYS),
);
const scalar = fc.oneof(weirdString, fc.integer(), fc.double(), fc.boolean(), fc.constant(null));

/** A nested structure `depth` levels deep, alternating arrays and objects, with a pollution key at the bottom. */
function deep(depth: number, key: string): unknown {
  let v: unknown = { [key]: { polluted: true } };
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { [key]: v, n: i };
  return v;
}
const deepValue = fc
  .tuple(fc.integer({ min: 20, max: 2_000 }), fc.constantFrom(...POLLUTION_KEYS))
  .map(([d, k]) => deep(d, k));

/** An object whose own keys include prototype-pollution names, built the way JSON.parse builds it. */
const pollutedObject = fc
  .dictionary(
    fc.oneof(fc.constantFrom(...POLLUTION_KEYS), fc.string({ maxLength: 8 })),
    fc.oneof(scalar, fc.constant({ polluted: true, isAdmin: true })),
    { maxKeys: 5 },
  )
  .map((d) => {
    const members = Object.entries(d).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? "null"}`);
    const text = `{${[...members, `"__proto__":{"polluted":true}`].join(",")}}`;
    return JSON.parse(text) as Record<string, unknown>;
  });

const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 2, arbitrary: scalar },
  { weight: 1, arbitrary: hugeString },
  { weight: 1, arbitrary: deepValue },
  { weight: 2, arbitrary: pollutedObject },
);
const anyObject: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  pollutedObject,
  fc.dictionary(fc.string({ maxLength: 12 }), anyJson, { maxKeys: 6 }),
  fc.constant({}),
  hugeString.map((s) => ({ text: s, id: s.slice(0, 64) })),
  deepValue.map((v) => ({ nested: v })),
);

const users = fc.constantFrom(ALICE, BOB, CAROL, "UDAVE004");

/** One hostile call: which broker tool, and its arguments. */
type HostileCall =
  | { kind: "broker"; name: string; args: unknown; turn: string }
  | { kind: "near_valid"; args: Record<string, unknown>; turn: string };

const brokerCall: fc.Arbitrary<HostileCall> = fc.record({
  kind: fc.constant("broker" as const),
  name: fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...BROKER_TOOLS) },
    { weight: 1, arbitrary: weirdString },
    { weight: 1, arbitrary: hugeString },
  ),
  args: fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record(
        {
          service: fc.oneof(fc.constant("vendor"), anyJson),
          tool: fc.oneof(fc.constantFrom(...VENDOR_TOOLS), anyJson),
          args: anyJson,
          on_behalf_of: fc.oneof(users, anyJson),
          query: anyJson,
          connection_id: anyJson,
        },
        { requiredKeys: [] },
      ),
    },
    { weight: 2, arbitrary: anyObject },
    { weight: 1, arbitrary: anyJson },
  ),
  turn: users,
});

/** An mcp_call that gets past the schema: a real service and fixture tool, hostile args, sometimes a forged on_behalf_of. */
const nearValid: fc.Arbitrary<HostileCall> = fc
  .record({
    tool: fc.constantFrom(...VENDOR_TOOLS),
    args: fc.oneof(fc.constant({}), anyObject),
    // Mostly the real turn user (to reach the vendor), sometimes a forged one.
    obo: fc.option(users, { nil: undefined, freq: 2 }),
    turn: fc.constantFrom(ALICE, ALICE, BOB, CAROL),
  })
  .map(({ tool, args, obo, turn }) => ({
    kind: "near_valid" as const,
    turn,
    args: { service: "vendor", tool, args, on_behalf_of: obo ?? turn },
  }));

const hostileCall = fc.oneof({ weight: 3, arbitrary: brokerCall }, { weight: 2, arbitrary: nearValid });

/**
 * The SDK looks tools up in a plain object, so `__proto__`, `constructor`, `toString`… find an
 * Object.prototype member and are refused as "disabled": still a refusal, and nothing runs.
 */
const PROTO_TOOL = new RegExp(
  `^MCP error -32602: Tool (${Object.getOwnPropertyNames(Object.prototype).join("|")}) disabled$`,
);

function assertNoCanary(what: string, blob: string): void {
  for (const f of FORBIDDEN) expect(blob.includes(f), `${what} leaks ALICE's credential`).toBe(false);
}

const PROTO_KEYS = Object.getOwnPropertyNames(Object.prototype).sort();
function assertNoPollution(): void {
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(PROTO_KEYS);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
}

let h: Harness;
let client: Awaited<ReturnType<Harness["session"]>>;
let stopResponder: () => void;
const answered = { allowed: 0, denied: 0 };
const APPROVAL_TIMEOUT_MS = 2_000;

beforeAll(async () => {
  h = await makeHarness({ approvalTimeoutMs: APPROVAL_TIMEOUT_MS });
  await h.connect(ALICE, { token: TOKEN_A });
  client = await h.session();
  // Every borrow BOB makes of ALICE's connection is answered as its card is shown: allowed once or
  // denied, alternately, so hostile arguments also reach the vendor on a borrowed connection. A
  // click the card does not offer (Allow on a card whose arguments could not all be shown) leaves
  // the approval to expire: the harness clock is moved past its timeout.
  let stopped = false;
  void (async () => {
    for (let next = 0; !stopped; next++) {
      const { approval: a } = await h.approvals.nextCard(next);
      if (stopped) return;
      const decision = next % 2 === 0 ? "allowed_once" : "denied";
      const result = await h.approvalService.decide(a.id, a.nonce, a.ownerUserId, decision);
      if (decision === "denied") answered.denied++;
      else answered.allowed++;
      if (result !== "applied") await h.clock.advanceAsync(APPROVAL_TIMEOUT_MS);
    }
  })();
  stopResponder = () => {
    stopped = true;
  };
});
afterAll(async () => {
  stopResponder();
  await h.close();
});

/** ALICE's connection with the canary, recreated if a hostile connections_revoke (as ALICE) ended it. */
async function ensureAlice(): Promise<void> {
  const live = await h.store.connections.list({ ownerUserId: ALICE, statuses: ["active"] });
  if (live.length === 0) await h.connect(ALICE, { token: TOKEN_A });
}

async function legitCallWorks(): Promise<void> {
  client.turn.user = ALICE;
  const r = await mcpCall(client.client, { tool: "read_item", args: { id: "legit" }, on_behalf_of: ALICE });
  expect(r.structured.status).toBe("ok");
  expect(r.structured.ranAs).toBe("own");
  expect(JSON.parse(r.text.split("\n")[0]!)).toMatchObject({ id: "legit", ranAs: ALICE });
  const list = await client.client.callTool({ name: "connections_list", arguments: {} });
  expect((list.structuredContent as { status: string }).status).toBe("ok");
}

describe("hostile inputs to every broker tool", () => {
  it("never crash the broker, never leak the canary, always answer with a validation error or a structured result", async () => {
    await legitCallWorks();
    const tally = {
      canaryTools: 0,
      validation: 0,
      protocolError: 0,
      ok: 0,
      refused: 0,
      other: 0,
      byCode: new Map<string, number>(),
    };
    let run = 0;
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(hostileCall, async (c) => {
        run++;
        await ensureAlice();
        client.turn.user = c.turn;
        const name = c.kind === "broker" ? c.name : "mcp_call";
        let result: CallToolResult | undefined;
        try {
          result = (await client.client.callTool({ name, arguments: c.args as Record<string, unknown> }, undefined, {
            timeout: 15_000,
          })) as CallToolResult;
        } catch (err) {
          // A JSON-RPC error is fine only as a protocol-level refusal of malformed params, never a timeout or a dead session.
          expect(err, String(err)).toBeInstanceOf(McpError);
          const e = err as McpError;
          if (e.code === -32603) {
            // The SDK answers a request whose `arguments` is not an object with its zod issues as an
            // internal error; it is still a schema refusal of the request's params, nothing more.
            const issues = JSON.parse(e.message.replace(/^MCP error -32603: /, "")) as { path: unknown[] }[];
            expect(issues.length).toBeGreaterThan(0);
            for (const i of issues) expect(i.path.slice(0, 2)).toEqual(["params", "arguments"]);
          } else expect([-32602, -32600]).toContain(e.code);
          assertNoCanary("protocol error", String((err as Error).message));
          tally.protocolError++;
          return;
        }
        const blob = JSON.stringify(result);
        assertNoCanary("result", blob);
        const structured = result.structuredContent as
          | { status?: unknown; code?: unknown; message?: unknown }
          | undefined;
        const text = (result.content ?? []).map((x) => (x.type === "text" ? x.text : "")).join("\n");
        if (structured === undefined) {
          // Only the SDK's own schema or unknown-tool answers come without structured content.
          expect(result.isError, text.slice(0, 300)).toBe(true);
          // SDK v1 prefixed its validation text with "MCP error -32602: "; v2 (the broker's server) does not.
          const known =
            /^(MCP error -32602: )?(Input validation error: Invalid arguments for tool \S+: |Tool [\s\S]* not found$)/.test(
              text,
            ) || PROTO_TOOL.test(text);
          expect(known, text.slice(0, 300)).toBe(true);
          tally.validation++;
        } else {
          expect(STATUSES.has(String(structured.status)), `status ${String(structured.status)}`).toBe(true);
          if (structured.status === "ok") {
            tally.ok++;
            if (c.kind === "near_valid" && ["env_dump", "leak_token", "fail_with_token"].includes(String(c.args.tool)))
              tally.canaryTools++;
          } else {
            tally.refused++;
            expect(typeof structured.code).toBe("string");
            expect(typeof structured.message).toBe("string");
            expect(String(structured.code)).not.toBe("internal_error");
          }
          const code = String(structured.code ?? structured.status);
          tally.byCode.set(code, (tally.byCode.get(code) ?? 0) + 1);
        }
        assertNoPollution();
        // The session keeps answering between hostile calls.
        if (run % 50 === 0) await legitCallWorks();
      }),
      { numRuns: RUNS },
    );
    await ensureAlice();
    await legitCallWorks();
    assertNoPollution();
    // Nothing the broker recorded carries the canary either.
    assertNoCanary("audit", JSON.stringify(await h.store.audit.query({ limit: 1_000_000 })));
    assertNoCanary("log", h.log.lines.join("\n"));
    console.log(
      `inputs: ${run} runs in ${Date.now() - started} ms; validation ${tally.validation}, protocol ${tally.protocolError}, ok ${tally.ok} (${tally.canaryTools} of them env_dump/leak_token/fail_with_token), refused ${tally.refused}`,
      Object.fromEntries(tally.byCode),
      answered,
    );
    // The generator must have reached the vendor and the refusals, or the test proves little.
    expect(tally.ok).toBeGreaterThan(10);
    expect(tally.canaryTools).toBeGreaterThan(3);
    expect(tally.validation).toBeGreaterThan(10);
    expect(tally.refused).toBeGreaterThan(10);
  }, 180_000);
});
