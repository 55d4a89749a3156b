import { chownSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import path from "node:path";
import type { Logger } from "../log/logger.js";
import { killProcesses } from "../proc/proc.js";
import { PoolError } from "./errors.js";

/** Hands out distinct unprivileged uids to live children, so they cannot read each other's /proc/<pid>/environ. */
export class UidAllocator {
  private readonly free: number[];
  constructor(base: number, count: number) {
    this.free = Array.from({ length: count }, (_, i) => base + i);
  }
  take(): number {
    const uid = this.free.shift();
    if (uid === undefined) throw new PoolError("pool_busy", "no free child uid");
    return uid;
  }
  give(uid: number): void {
    this.free.push(uid);
  }
}

/** What a stdio child of one connection runs in: a private HOME and TMPDIR, its own uid when there are any. */
export interface ChildSandbox {
  readonly home: string;
  readonly uid: number | undefined;
  /** The child's whole environment: the allowlisted base, the registry's static env, the credential. */
  readonly env: Record<string, string>;
  /** Kills every process left in the sandbox (started since `sinceTicks`), removes it, and frees its uid. */
  cleanup(sinceTicks: number | undefined): void;
}

/** Where sandboxes are made and what every child's environment starts from. */
export interface SandboxSettings {
  /** Base environment every child gets (PATH, locale): nothing else of the broker's. */
  readonly baseEnv: Readonly<Record<string, string>>;
  /** Where private per-connection HOME/TMPDIR directories are made. */
  readonly runDir: string;
  /** When set and the broker runs as root, children run under uids allocated from here. */
  readonly uids?: UidAllocator | undefined;
  readonly log: Logger;
}

/** Makes the private directories of a new child of `connectionId` (owned by its uid, if it gets one). */
export function openSandbox(
  s: SandboxSettings,
  connectionId: string,
  staticEnv: Readonly<Record<string, string>> | undefined,
  credentialEnv: Readonly<Record<string, string>>,
): ChildSandbox {
  mkdirSync(s.runDir, { recursive: true, mode: 0o711 });
  const root = mkdtempSync(path.join(s.runDir, `${connectionId}-`));
  const home = path.join(root, "home");
  const tmp = path.join(root, "tmp");
  mkdirSync(home, { mode: 0o700 });
  mkdirSync(tmp, { mode: 0o700 });
  const uid = s.uids?.take();
  if (uid !== undefined) for (const d of [root, home, tmp]) chownSync(d, uid, uid);
  // Allowlisted base + the registry's static env + this connection's credential. Nothing else.
  const env: Record<string, string> = {
    ...s.baseEnv,
    HOME: home,
    TMPDIR: tmp,
    USER: "slaude-vendor",
    LOGNAME: "slaude-vendor",
    ...staticEnv,
    ...credentialEnv,
  };
  const cleanup = (sinceTicks: number | undefined) => {
    // Every process of this connection, however detached: its private HOME (inherited through
    // setsid and double forks) and, when it has one, its own uid (which it cannot leave). Done
    // before the uid is handed to another connection.
    const killed = killProcesses({
      envEntries: [`HOME=${home}`],
      ...(uid !== undefined ? { uid } : {}),
      ...(sinceTicks !== undefined ? { sinceTicks } : {}),
    });
    if (killed) s.log.warn("killed processes a vendor left behind", { connectionId, count: killed });
    rmSync(root, { recursive: true, force: true });
    if (uid !== undefined) s.uids?.give(uid);
  };
  return { home, uid, env, cleanup };
}
