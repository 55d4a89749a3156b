// What the docs tests read: the repository's files, its docs, and the code's own lists of names.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { SECRET_VARIABLES } from "../../src/config/secret-files.js";

/** The repository root. */
export const ROOT = path.resolve(import.meta.dirname, "../..");

/** A file of the repository, by its path from the root. */
export const read = (rel: string): string => readFileSync(path.join(ROOT, rel), "utf8");

/** Every doc page: the README and docs/*.md. */
export const DOCS = [
  "README.md",
  ...readdirSync(path.join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** Every variable the env schema reads: the keys of `envSchema` in src/config/env-schema.ts (empty when it is not found). */
export function schemaVariables(): Set<string> {
  const src = read("src/config/env-schema.ts");
  const start = src.indexOf("export const envSchema = z.object({");
  if (start < 0) return new Set();
  return new Set(
    [...src.slice(start, src.indexOf("\n});", start)).matchAll(/^ {2}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]!),
  );
}

/** `<NAME>_FILE` variants of the secret variables (read by src/config/secret-files.ts). */
export const FILE_VARIANTS = new Set(SECRET_VARIABLES.map((n) => `${n}_FILE`));
