// Holds a SQLite write lock from another process (test/fixtures/sqlite-lock-holder.ts), the way a
// second writer would, so tests exercise SQLITE_BUSY across processes rather than in-process.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const HOLDER = fileURLToPath(new URL("../fixtures/sqlite-lock-holder.ts", import.meta.url));

/** A held write lock; `release()` resolves once the holder process has rolled back and exited. */
export interface HeldLock {
  readonly pid: number;
  release(): Promise<void>;
}

/** Starts the lock holder on `dbFile` and resolves once it holds the write lock (BEGIN IMMEDIATE done). */
export async function holdWriteLock(dbFile: string): Promise<HeldLock> {
  const child = spawn(process.execPath, ["--import", "tsx", HOLDER, dbFile], {
    stdio: ["pipe", "pipe", "pipe"],
    shell: false,
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  await new Promise<void>((resolve, reject) => {
    let out = "";
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      if (out.includes("locked\n")) resolve();
    });
    void exited.then(() => reject(new Error(`lock holder exited before locking: ${stderr}`)));
  });
  let releasing: Promise<void> | undefined;
  return {
    pid: child.pid!,
    release: () =>
      (releasing ??= (async () => {
        child.stdin!.end("release\n");
        await exited;
      })()),
  };
}
