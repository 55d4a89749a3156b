import { createHash } from "node:crypto";
import { canonicalJson } from "../domain/canonical-json.js";

// What a tool's definition is, for pinning: the parts of a tools/list entry a model reads or a call
// is validated against. Its hash is over RFC 8785 canonical JSON, so key order and whitespace a
// vendor happens to send never count as a change; every other byte of these fields does.

/** The pinned parts of one tool (name, description, input/output schema, annotations). */
export interface ToolDefinition {
  readonly name: string;
  readonly description?: string;
  readonly inputSchema?: unknown;
  readonly outputSchema?: unknown;
  readonly annotations?: unknown;
}

/** Most characters of one definition kept for the admin's diff; the hash always covers all of it. */
export const MAX_DEFINITION_CHARS = 16_384;

/** The pinned parts of a tools/list entry (anything else the vendor sent is not part of the pin). */
export function definitionOf(t: {
  name: string;
  description?: unknown;
  inputSchema?: unknown;
  outputSchema?: unknown;
  annotations?: unknown;
}): ToolDefinition {
  return {
    name: t.name,
    ...(t.description !== undefined ? { description: String(t.description) } : {}),
    ...(t.inputSchema !== undefined ? { inputSchema: t.inputSchema } : {}),
    ...(t.outputSchema !== undefined ? { outputSchema: t.outputSchema } : {}),
    ...(t.annotations !== undefined ? { annotations: t.annotations } : {}),
  };
}

/** SHA-256 (hex) of the definition's canonical JSON. */
export function definitionHash(d: ToolDefinition): string {
  return createHash("sha256").update(canonicalJson(d)).digest("hex");
}

/** The definition as indented JSON with sorted keys (so diffs line up), cut at MAX_DEFINITION_CHARS. */
export function definitionText(d: ToolDefinition): string {
  const text = JSON.stringify(JSON.parse(canonicalJson(d)), null, 2);
  if (text.length <= MAX_DEFINITION_CHARS) return text;
  return `${text.slice(0, MAX_DEFINITION_CHARS)}\n… (cut: ${text.length} characters in full)`;
}
