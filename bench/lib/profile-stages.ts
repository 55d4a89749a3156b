// The per-call budget of a CPU profile: every sample's self time charged to one stage of a warm
// call, by the code that ran it. Native frames (no URL: a syscall, a SQLite step) are charged to the
// nearest caller with a URL; zod is charged to whoever asked it to validate (the SDK or us).

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber?: number };
  readonly children?: readonly number[];
}

/** A `.cpuprofile`'s samples and the call tree they point into. */
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** The profile's nodes by id, and each node's parent. */
function callTree(prof: Profile): { byId: Map<number, ProfileNode>; parent: Map<number, number> } {
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  return { byId, parent };
}

/** The stages, in the order the budget prints them. */
export const STAGES = [
  "socket and pipe writes (syscalls)",
  "HTTP parsing, web Request/Response",
  "MCP SDK, server side (2025 transport, tool dispatch)",
  "MCP SDK, client side (vendor call, result validation)",
  "zod called by our code",
  "SQLite (statements, commits)",
  "broker: policy, pool, credential, hygiene, audit rows",
  "HTTP front: host token, routing, sessions",
  "async context and timers (AsyncLocalStorage hooks)",
  "crypto (token digests, argument hashes)",
  "garbage collection",
  "start-up (module loading, compiling)",
  "other runtime",
] as const;
export type Stage = (typeof STAGES)[number];

const SDK_CLIENT = /@modelcontextprotocol\/client|@modelcontextprotocol\/sdk\/dist\/esm\/client/;

function stageOfUrl(url: string, fn: string, zodCaller: string | undefined): Stage | undefined {
  if (fn === "(garbage collector)") return "garbage collection";
  if (!url) return undefined;
  if (url.includes("/zod/")) {
    if (zodCaller === undefined) return undefined;
    return zodCaller.includes("@modelcontextprotocol")
      ? SDK_CLIENT.test(zodCaller)
        ? "MCP SDK, client side (vendor call, result validation)"
        : "MCP SDK, server side (2025 transport, tool dispatch)"
      : "zod called by our code";
  }
  if (SDK_CLIENT.test(url)) return "MCP SDK, client side (vendor call, result validation)";
  if (url.includes("@modelcontextprotocol")) return "MCP SDK, server side (2025 transport, tool dispatch)";
  if (url.includes("better-sqlite3") || url.includes("/dist/store/")) return "SQLite (statements, commits)";
  if (url.includes("/dist/server/")) return "HTTP front: host token, routing, sessions";
  if (url.includes("/dist/")) return "broker: policy, pool, credential, hygiene, audit rows";
  if (/stream_base_commons|node:net$/.test(url)) return "socket and pipe writes (syscalls)";
  if (/node:_http|undici|webstreams|node:internal\/url|node:internal\/streams/.test(url))
    return "HTTP parsing, web Request/Response";
  if (/async_hooks|node:internal\/timers|node:timers|task_queues/.test(url))
    return "async context and timers (AsyncLocalStorage hooks)";
  if (url.includes("node:internal/crypto")) return "crypto (token digests, argument hashes)";
  if (/node:internal\/modules|node:internal\/bootstrap|node:internal\/main/.test(url))
    return "start-up (module loading, compiling)";
  return "other runtime";
}

/** Self time (µs) per stage, idle excluded. */
export function stageBudget(prof: Profile): Map<Stage, number> {
  const { byId, parent } = callTree(prof);
  const self = new Map<number, number>();
  for (const [i, id] of prof.samples.entries()) self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0));
  const out = new Map<Stage, number>(STAGES.map((s) => [s, 0]));
  for (const [id, us] of self) {
    const fn = byId.get(id)!.callFrame.functionName;
    if (fn === "(idle)") continue;
    if (fn === "(program)") {
      out.set("other runtime", out.get("other runtime")! + us);
      continue;
    }
    // The first frame with a URL decides; for zod, the first non-zod frame above it says who asked.
    let stage: Stage | undefined;
    let inZod = false;
    for (let p: number | undefined = id; p !== undefined && !stage; p = parent.get(p)) {
      const f = byId.get(p)!.callFrame;
      if (f.url.includes("/zod/")) inZod = true;
      else if (inZod && f.url) stage = stageOfUrl("/zod/", f.functionName, f.url);
      else if (!inZod) stage = stageOfUrl(f.url, f.functionName, undefined);
    }
    const s = stage ?? "other runtime";
    out.set(s, out.get(s)! + us);
  }
  return out;
}

/** The budget's lines: each stage's share of `busyUs` (µs) and its ms per call over `calls`. */
export function budgetLines(stages: ReadonlyMap<Stage, number>, busyUs: number, calls: number): string {
  return STAGES.map(
    (st) =>
      `  ${((stages.get(st)! / busyUs) * 100).toFixed(1).padStart(5)}%  ${(stages.get(st)! / 1000 / calls).toFixed(3)} ms/call  ${st}`,
  ).join("\n");
}

/**
 * Self time (µs) of zod (and the parsers it compiles) by the function that asked it to validate:
 * the first frame above zod with a URL, as `name file:line`. Says which validation costs what.
 */
export function validationByCaller(prof: Profile): Map<string, number> {
  const { byId, parent } = callTree(prof);
  const out = new Map<string, number>();
  for (const [i, id] of prof.samples.entries()) {
    let inZod = false;
    for (let p: number | undefined = id; p !== undefined; p = parent.get(p)) {
      const f = byId.get(p)!.callFrame;
      if (f.url.includes("/zod/")) inZod = true;
      else if (f.url) {
        if (inZod) {
          // A package's file keeps its package name (which SDK bundle asked); ours is shown from dist/.
          const file = f.url.includes("node_modules/")
            ? f.url.replace(/.*node_modules\//, "nm/")
            : f.url.replace(/^file:\/\//, "").replace(/.*\/dist\//, "dist/");
          const key = `${f.functionName || "(anon)"} ${file}:${(f.lineNumber ?? 0) + 1}`;
          out.set(key, (out.get(key) ?? 0) + (prof.timeDeltas[i] ?? 0));
        }
        break;
      }
    }
  }
  return out;
}
