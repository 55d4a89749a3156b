// Runs the CLI two ways: as a real process (from the sources) and in-process via runCli.
import { spawn } from "node:child_process";
import { PassThrough, Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { runCli } from "../../src/cli/main.js";
import type { Clock } from "../../src/clock/clock.js";

/** The CLI as a process, run from the sources (bin-from-source.js); the installed bin is tested by package.test.ts. */
export const BIN = fileURLToPath(new URL("./bin-from-source.js", import.meta.url));

/** What one CLI invocation did. */
export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Spawns `node bin-from-source.js ...args` with exactly `env` (plus PATH), writing `stdin` and closing it. */
export function runBin(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  opts: { stdin?: string; cwd?: string } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH, ...env },
      cwd: opts.cwd ?? process.cwd(),
      stdio: ["pipe", "pipe", "pipe"],
      shell: false,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    // A watchdog for a hung child, not a timing assertion: on a loaded machine tsx's first
    // transform of the sources alone has taken over 30 s.
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.on("error", () => undefined); // the command may exit before reading stdin
    child.stdin.end(opts.stdin ?? "");
  });
}

/** Runs `runCli` in this process with captured streams. */
export async function runInProcess(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  opts: { stdin?: string; clock?: Clock } = {},
): Promise<CliResult> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.setEncoding("utf8").on("data", (d: string) => (out += d));
  stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
  const code = await runCli(args, {
    stdin: Readable.from(opts.stdin === undefined ? [] : [Buffer.from(opts.stdin)]),
    stdout,
    stderr,
    env,
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
  return { code, stdout: out, stderr: err };
}
