import { type ChildProcess, spawn } from "node:child_process";
import type { JSONRPCMessage, Transport } from "@modelcontextprotocol/client";
import { serializeMessage } from "@modelcontextprotocol/client";
import { type Clock, systemClock } from "../clock/clock.js";
import { asError } from "../domain/errors.js";
import { FrameReader, oversizedResponse } from "./frame-reader.js";

/** How to start a vendor child. `env` is the complete environment: nothing is inherited. */
export interface ChildSpec {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly uid?: number;
  readonly gid?: number;
  /** Grace periods of the stop sequence: stdin close → SIGTERM → SIGKILL. */
  readonly stopGraceMs?: number;
  /** Cap on one buffered stdout message, so a flooding vendor cannot exhaust memory; a tools/call result over it is truncated. */
  readonly maxMessageBytes?: number;
  /** Receives stderr lines (already capped); never logged with credential values unredacted by the caller. */
  readonly onStderr?: (chunk: string) => void;
  /** Called as soon as the child exists, before any message (to record it for crash recovery). */
  readonly onSpawn?: (pid: number) => void;
  /** Times the drain and stop sequence of the real process (default: wall time). */
  readonly clock?: Clock;
}

/** How long a stop waits for the leader's exit after SIGKILL before giving up on it. */
export const KILL_WAIT_MS = 5_000;

/** After the leader exits, how long its last output may still drain before its pipes are destroyed. */
const EXIT_DRAIN_MS = 200;

/** Sends `signal` to a whole process group, ignoring "no such process". */
export function killGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * An MCP client transport over a child's stdio, with the child leading its own process group
 * (`detached`), no shell, an explicit environment, and a stop sequence that reaches grandchildren:
 * stdin close → SIGTERM to the group → SIGKILL to the group.
 */
export class GroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child: ChildProcess | undefined;
  private readonly buffer: FrameReader;
  /** Messages are handed over one microtask apart, in order (see `deliver`). */
  private delivered: Promise<void> = Promise.resolve();
  private exited: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

  private readonly clock: Clock;

  constructor(private readonly spec: ChildSpec) {
    this.clock = spec.clock ?? systemClock;
    this.buffer = new FrameReader(spec.maxMessageBytes ?? 16 * 1024 * 1024);
  }

  /**
   * Never the child's stderr (it may echo the credential: it goes to `onStderr` only). Present so the
   * SDK recognises a stdio transport (it looks for `stderr` and `pid`): a version probe the child
   * never answers then means a 2025 server, not an outage.
   */
  get stderr(): null {
    return null;
  }

  /** The child's pid, which is also its process group id. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(): Promise<void> {
    if (this.child) throw new Error("transport already started");
    const child = spawn(this.spec.command, [...this.spec.args], {
      env: { ...this.spec.env },
      cwd: this.spec.cwd,
      stdio: ["pipe", "pipe", "pipe"],
      shell: false,
      detached: true,
      ...(this.spec.uid !== undefined ? { uid: this.spec.uid } : {}),
      ...(this.spec.gid !== undefined ? { gid: this.spec.gid } : {}),
    });
    this.child = child;
    // The leader's exit ends this vendor, not the pipes' close: a daemonised grandchild may hold
    // our stdout open forever. Its pipes are destroyed so nothing more is read.
    this.exited = new Promise((resolve) => {
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        for (const s of [child.stdin, child.stdout, child.stderr]) s?.destroy();
        resolve();
      };
      // "close" (pipes drained) normally follows "exit" at once; a held pipe gets a short drain.
      child.once("close", finish);
      child.once("exit", () => this.clock.setTimeout(finish, EXIT_DRAIN_MS, { unref: true }));
    });
    await new Promise<void>((resolve, reject) => {
      child.once("error", reject);
      child.once("spawn", () => {
        child.off("error", reject);
        if (child.pid) this.spec.onSpawn?.(child.pid);
        resolve();
      });
    });
    child.on("error", (e) => this.onerror?.(e));
    child.stdin?.on("error", (e) => this.onerror?.(e));
    child.stdout?.on("data", (chunk: Buffer) => {
      try {
        this.buffer.push(chunk, (frame) => {
          // A result over the cap answers its call truncated; anything else over it is not trusted.
          const msg = frame.kind === "message" ? frame.message : oversizedResponse(frame);
          if (!msg)
            throw new Error(
              `vendor message of ${frame.kind === "oversized" ? frame.bytes : 0} bytes exceeds the frame cap`,
            );
          this.deliver(msg);
        });
      } catch (e) {
        // Malformed or oversized output: this child can no longer be trusted to frame messages.
        // Stop reading at once (a flood would otherwise keep arriving) and kill, not ask.
        child.stdout?.destroy();
        this.onerror?.(asError(e));
        void this.kill();
      }
    });
    child.stderr?.on("data", (chunk: Buffer) => this.spec.onStderr?.(chunk.toString("utf8").slice(0, 4096)));
    void this.exited.then(async () => {
      // The leader is gone; sweep anything it left in its group (grandchildren of `npx`).
      if (child.pid) killGroup(child.pid, "SIGKILL");
      this.buffer.clear();
      // Messages read before the exit reach the client before it learns of the close.
      await this.delivered;
      this.onclose?.();
    });
  }

  /**
   * Hands `msg` to the client after the messages before it, each in its own microtask. The SDK runs
   * a notification's handler one microtask late but a response at once, so when progress
   * notifications and the result arrive in one stdout chunk (a busy broker reads them together),
   * handing them over back to back lets the result retire its progress handler first and the
   * progress is lost. One microtask apart, each notification's handler runs before the next message.
   */
  private deliver(msg: JSONRPCMessage): void {
    this.delivered = this.delivered.then(() => {
      try {
        this.onmessage?.(msg);
      } catch (e) {
        this.onerror?.(asError(e));
      }
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed) throw new Error("vendor process is not running");
    await new Promise<void>((resolve, reject) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once("drain", resolve).once("error", reject);
    });
  }

  /** Stops the child and its whole group; resolves once the leader has exited (or KILL_WAIT_MS after its SIGKILL). */
  async close(): Promise<void> {
    this.closing ??= this.stop();
    return this.closing;
  }

  private async stop(): Promise<void> {
    const child = this.child;
    if (!child?.pid || !this.exited) return;
    const pgid = child.pid;
    const grace = this.spec.stopGraceMs ?? 2_000;
    const wait = (ms: number) =>
      Promise.race([
        this.exited!.then(() => true),
        new Promise<boolean>((r) => this.clock.setTimeout(() => r(false), ms, { unref: true })),
      ]);
    child.stdin?.end();
    if (!(await wait(grace))) {
      killGroup(pgid, "SIGTERM");
      if (!(await wait(grace))) killGroup(pgid, "SIGKILL");
    }
    // Bounded even now: a leader in uninterruptible sleep may outlive SIGKILL for a while.
    await wait(KILL_WAIT_MS);
    killGroup(pgid, "SIGKILL");
  }

  /** Immediate SIGKILL of the whole group (hung child, revoked connection); waits a bounded time for the exit. */
  async kill(): Promise<void> {
    const pid = this.child?.pid;
    if (pid) killGroup(pid, "SIGKILL");
    const exited = this.exited;
    if (exited)
      await Promise.race([exited, new Promise<void>((r) => this.clock.setTimeout(r, KILL_WAIT_MS, { unref: true }))]);
  }
}
