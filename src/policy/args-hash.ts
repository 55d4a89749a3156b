import { createHash } from "node:crypto";
import { canonicalJson } from "../domain/canonical-json.js";

/** The hash an approval is bound to: SHA-256 over the canonical (service, tool, args). */
export function callHash(service: string, tool: string, args: unknown): string {
  return createHash("sha256").update(canonicalJson({ service, tool, args })).digest("hex");
}
