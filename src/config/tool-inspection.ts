import type { ToolClassWord } from "./registry-schema.js";

// What a running vendor's tools/list says, set against a registry entry: the class each tool's
// annotations suggest, the tools the entry leaves unclassified, and the names it lists that the
// vendor lacks (a misspelt name silently falls back to the default class). Pure: no I/O.

/** A vendor tool as `tools/list` describes it (only the fields a classification reads). */
export interface VendorTool {
  readonly name: string;
  readonly title?: string | undefined;
  readonly annotations?:
    | { readonly readOnlyHint?: boolean | undefined; readonly destructiveHint?: boolean | undefined }
    | undefined;
}

/** The class suggested for one tool, and the reason, for an operator to review before pasting. */
export interface ToolSuggestion {
  readonly name: string;
  readonly words: readonly ToolClassWord[];
  readonly reason: string;
}

// Words in a tool name that mean "the caller's own account": running such a tool on a borrowed
// connection would answer about the owner, not the caller, so it is suggested personal.
const SELF_WORDS = new Set(["me", "my", "mine", "self", "whoami", "userinfo", "profile"]);

/** Splits `get_me`, `API-get-self`, `atlassianUserInfo` into lowercase words. */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/)
    .filter((w) => w.length > 0)
    .map((w) => w.toLowerCase());
}

/**
 * The class a tool's annotations suggest: `readOnlyHint: true` → read, anything else → write (MCP's
 * defaults are "not read-only, destructive"); borrowable unless its name is about the caller's own
 * account (`get_me`, `API-get-self`, `atlassianUserInfo`), then personal.
 */
export function suggestToolClass(tool: VendorTool): ToolSuggestion {
  const a = tool.annotations;
  const words = nameWords(tool.name);
  const self = words.some((w) => SELF_WORDS.has(w)) || words.some((w, i) => w === "user" && words[i + 1] === "info");
  const access: ToolClassWord = self ? "personal" : "borrowable";
  const reasons: string[] = [];
  let rw: ToolClassWord;
  if (a?.readOnlyHint === true) {
    rw = "read";
    reasons.push("readOnlyHint");
  } else {
    rw = "write";
    if (a?.destructiveHint === true) reasons.push("destructiveHint");
    else if (a?.readOnlyHint === false) reasons.push("readOnlyHint: false");
    else reasons.push("no annotations: review");
  }
  if (self) reasons.push("about the caller's own account");
  return { name: tool.name, words: [access, rw], reason: reasons.join(", ") };
}

/** Tools the vendor offers that `classified` does not name, and names in `classified` the vendor lacks; both sorted. */
export function compareTools(
  classified: readonly string[],
  offered: readonly VendorTool[],
): { unclassified: string[]; missing: string[] } {
  const offeredNames = new Set(offered.map((t) => t.name));
  const named = new Set(classified);
  return {
    unclassified: [...offeredNames].filter((n) => !named.has(n)).sort(),
    missing: [...named].filter((n) => !offeredNames.has(n)).sort(),
  };
}

/** A `"tools": { ... }` block, one tool per line, ready to paste into a registry entry. */
export function renderToolsBlock(suggestions: readonly ToolSuggestion[]): string {
  const sorted = [...suggestions].sort((x, y) => x.name.localeCompare(y.name));
  const lines = sorted.map(
    (s, i) =>
      `  ${JSON.stringify(s.name)}: ${JSON.stringify(s.words).replace(/,/g, ", ")}${i < sorted.length - 1 ? "," : ""}`,
  );
  return `"tools": {\n${lines.join("\n")}\n}`;
}

/** A vendor-supplied name made safe to print on a terminal: control characters (C0, DEL, C1) become `\uXXXX`. */
export function printableName(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this escapes
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
