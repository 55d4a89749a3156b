// Facts about real processes read straight from /proc, for tests that must prove a child (or its
// grandchild) is gone or never saw a secret. Zombies count as dead: an orphaned grandchild killed
// by SIGKILL may linger as a zombie until init reaps it, but it runs nothing and holds no memory.
import { readdirSync, readFileSync } from "node:fs";
import { vi } from "vitest";

/** The kernel's one-letter state of `pid` (R, S, Z…), or undefined if there is no such process. */
export function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
  } catch {
    return undefined;
  }
}

/** The process group of `pid`, or undefined if there is no such process. */
export function processGroup(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
  } catch {
    return undefined;
  }
}

/** The parent of `pid`, or undefined if there is no such process. */
export function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

/** Whether `pid` is `ancestor` or one of its descendants (walking at most 64 parents). */
export function descendsFrom(pid: number, ancestor: number): boolean {
  for (let p: number | undefined = pid, i = 0; p !== undefined && p > 1 && i < 64; p = parentOf(p), i++)
    if (p === ancestor) return true;
  return false;
}

/** Whether `pid` exists (process.kill(pid, 0)) and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const state = processState(pid);
  return state !== undefined && state !== "Z" && state !== "X";
}

/** Live (non-zombie) members of process group `pgid`. */
export function groupMembers(pgid: number): number[] {
  return readdirSync("/proc")
    .filter((n) => /^\d+$/.test(n))
    .map(Number)
    .filter((pid) => processGroup(pid) === pgid && isAlive(pid));
}

/** Waits up to `ms` for every pid to be dead; returns the ones still alive. */
export async function waitDead(pids: readonly number[], ms = 3_000): Promise<number[]> {
  await waitFor(() => !pids.some(isAlive), ms, 20);
  return pids.filter(isAlive);
}

/** Polls `cond` (every `interval` ms, through vi.waitFor) until it holds or `ms` passes; returns its last value. */
export async function waitFor(cond: () => boolean, ms = 20_000, interval = 10): Promise<boolean> {
  return vi
    .waitFor(
      () => {
        if (!cond()) throw new Error("condition not met yet");
        return true;
      },
      { timeout: ms, interval },
    )
    .catch(() => false);
}

function readProcFile(pid: number, name: "environ" | "cmdline"): string {
  try {
    return readFileSync(`/proc/${pid}/${name}`, "utf8");
  } catch {
    return "";
  }
}

/** The raw environment block of `pid` ("K=V\0K=V\0…"); empty when gone or unreadable. */
export function environOf(pid: number): string {
  return readProcFile(pid, "environ");
}

/** The environment of `pid` as a record. */
export function envOf(pid: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of environOf(pid).split("\0")) {
    const i = kv.indexOf("=");
    if (i > 0) out[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return out;
}

/** The raw argv block of `pid` ("arg0\0arg1\0…"); empty when gone or unreadable. */
export function cmdlineOf(pid: number): string {
  return readProcFile(pid, "cmdline");
}

/** Live (non-zombie) processes other than this one whose environ or cmdline contains any needle. */
export function processesReferencing(needles: readonly string[]): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    const blob = `${environOf(pid)}\0${cmdlineOf(pid)}`;
    if (needles.some((n) => blob.includes(n)) && isAlive(pid)) out.push(pid);
  }
  return out;
}

/** The distinct process groups of the live processes whose environ or cmdline contains any needle. */
export function groupsReferencing(needles: readonly string[]): number[] {
  return [...new Set(processesReferencing(needles).map((p) => processGroup(p) ?? p))].sort((a, b) => a - b);
}
