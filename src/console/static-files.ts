import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError } from "../config/errors.js";

// The console's page, styles and scripts are plain files under static/console/, read once at
// start-up and served by exact name: no path from a request ever reaches the file system.

/** static/console/ of this package (two levels up from src/console or dist/console). */
export const CONSOLE_STATIC_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../static/console");

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".svg": "image/svg+xml",
};

/** One served file. */
export interface StaticFile {
  readonly body: Buffer;
  readonly type: string;
}

/** Reads every servable file of `dir` (not recursive) into memory, keyed by file name. */
export function loadStaticFiles(dir: string = CONSOLE_STATIC_DIR): ReadonlyMap<string, StaticFile> {
  const files = new Map<string, StaticFile>();
  for (const name of readdirSync(dir)) {
    const type = TYPES[path.extname(name)];
    if (type && /^[a-z0-9-]+\.[a-z]+$/.test(name)) files.set(name, { body: readFileSync(path.join(dir, name)), type });
  }
  if (!files.has("index.html"))
    throw new ConfigError("missing_assets", `console assets missing: no index.html in ${dir}`);
  return files;
}
