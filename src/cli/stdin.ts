import type { Readable } from "node:stream";
import { UsageError } from "./context.js";

/** Reads all of standard input (capped at 1 MiB) and strips one trailing newline. */
export async function readSecretFromStdin(stdin: Readable, maxBytes = 1 << 20): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stdin) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += b.length;
    if (size > maxBytes) throw new UsageError("standard input is larger than 1 MiB");
    chunks.push(b);
  }
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}
