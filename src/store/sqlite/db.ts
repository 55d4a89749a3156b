import { closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { StoreError } from "../errors.js";

/** A better-sqlite3 handle. */
export type Db = Database.Database;

/** Opens (creating if needed) a SQLite file with WAL, foreign keys and a busy timeout. */
export function openDatabase(file: string, opts: { readonly?: boolean } = {}): Db {
  try {
    if (!opts.readonly) {
      mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      // Create the file owner-only before SQLite does: the WAL and SHM files inherit its mode.
      if (!existsSync(file)) closeSync(openSync(file, "a", 0o600));
    }
    const db = new Database(file, { readonly: opts.readonly ?? false, fileMustExist: opts.readonly ?? false });
    db.pragma("busy_timeout = 5000");
    if (!opts.readonly) {
      db.pragma("journal_mode = WAL");
      // NORMAL in WAL mode: durable against process crashes (SIGKILL); only power loss can drop the last commits.
      db.pragma("synchronous = NORMAL");
    }
    db.pragma("foreign_keys = ON");
    // Wiped ciphertexts are overwritten on disk, not just unlinked from the b-tree.
    if (!opts.readonly) db.pragma("secure_delete = ON");
    return db;
  } catch (cause) {
    throw new StoreError("open_failed", `cannot open database ${file}: ${(cause as Error).message}`, { cause });
  }
}
