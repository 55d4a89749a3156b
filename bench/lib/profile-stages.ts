// The per-call budget of a CPU profile: every sample's self time charged to one stage of a warm
// call, by the code that ran it. Native frames (no URL: a syscall, a SQLite step) are charged to the
// nearest caller with a URL; zod is charged to whoever asked it to validate (the SDK or us).

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber?: number };
  readonly children?: readonly number[];
}

/** A `.cpuprofile`'s samples and the call tree they point into. */
export interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

type CallFrame = ProfileNode["callFrame"];

/** A profile indexed: nodes by id, each node's parent, and each node's self time (µs). */
export interface ProfileIndex {
  readonly byId: ReadonlyMap<number, ProfileNode>;
  readonly parent: ReadonlyMap<number, number>;
  readonly self: ReadonlyMap<number, number>;
}

export function indexProfile(prof: Profile): ProfileIndex {
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  for (const [i, id] of prof.samples.entries()) self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0));
  return { byId, parent, self };
}

/** A frame's URL, short: a package's file as `nm/<package>/…`, ours from `dist/`. */
export function shortUrl(url: string): string {
  return url.includes("node_modules/")
    ? url.replace(/.*node_modules\//, "nm/")
    : url.replace(/^file:\/\//, "").replace(/.*\/dist\//, "dist/");
}

/** A frame as `name file:line`. */
export const frameName = (f: CallFrame): string =>
  `${f.functionName || "(anon)"} ${shortUrl(f.url)}:${(f.lineNumber ?? 0) + 1}`;

/**
 * The first frame at or above node `id` with a URL, zod's own frames passed over; `viaZod` when
 * zod was on the way (the frame is then the code that asked zod to validate).
 */
function codeFrame(t: ProfileIndex, id: number): { frame: CallFrame; viaZod: boolean } | undefined {
  let viaZod = false;
  for (let p: number | undefined = id; p !== undefined; p = t.parent.get(p)) {
    const frame = t.byId.get(p)!.callFrame;
    if (frame.url.includes("/zod/")) viaZod = true;
    else if (frame.url) return { frame, viaZod };
  }
  return undefined;
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

/** The stage of zod's time, by the code that asked it to validate (at `askerUrl`). */
function validationStage(askerUrl: string): Stage {
  if (!askerUrl.includes("@modelcontextprotocol")) return "zod called by our code";
  return SDK_CLIENT.test(askerUrl)
    ? "MCP SDK, client side (vendor call, result validation)"
    : "MCP SDK, server side (2025 transport, tool dispatch)";
}

/** The stage of code at `url` (not zod's: see validationStage). */
function stageOfUrl(url: string): Stage {
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
export function stageBudget(t: ProfileIndex): Map<Stage, number> {
  const out = new Map<Stage, number>(STAGES.map((s) => [s, 0]));
  for (const [id, us] of t.self) {
    const fn = t.byId.get(id)!.callFrame.functionName;
    if (fn === "(idle)") continue;
    // The first frame with a URL decides; for zod, the first non-zod frame above it says who asked.
    let s: Stage = "other runtime";
    if (fn === "(garbage collector)") s = "garbage collection";
    else if (fn !== "(program)") {
      const at = codeFrame(t, id);
      if (at) s = at.viaZod ? validationStage(at.frame.url) : stageOfUrl(at.frame.url);
    }
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
export function validationByCaller(t: ProfileIndex): Map<string, number> {
  const out = new Map<string, number>();
  for (const [id, us] of t.self) {
    const at = codeFrame(t, id);
    if (!at?.viaZod) continue;
    const key = frameName(at.frame);
    out.set(key, (out.get(key) ?? 0) + us);
  }
  return out;
}
