import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it, type TestContext } from "vitest";
import { findProcesses, killProcesses, processStartTicks, readStat } from "../../src/proc/proc.js";
import { isAlive, waitDead, waitFor } from "../support/proc.js";

// The shared /proc reader against real processes: a marker finds a process however detached it is
// (its own session, reparented), never this process, never a bystander; killProcesses kills exactly
// what it finds.

/** A long-lived node process in its own session (setsid) with `home` as HOME; killed when the test ends. */
async function daemon(ctx: TestContext, home: string): Promise<number> {
  const child = spawn(process.execPath, ["-e", "setInterval(()=>{},1<<30)"], {
    detached: true,
    stdio: "ignore",
    env: { HOME: home, PATH: process.env.PATH ?? "" },
  });
  child.unref();
  const pid = child.pid!;
  ctx.onTestFinished(() => void (isAlive(pid) && process.kill(pid, "SIGKILL")));
  expect(await waitFor(() => processStartTicks(pid) !== undefined, 10_000)).toBe(true);
  return pid;
}

describe.concurrent("src/proc", () => {
  it("finds processes by HOME, by HOME prefix and as descendants of a root; never itself, never a bystander", async (ctx) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-proc-"));
    ctx.onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const a = await daemon(ctx, path.join(dir, "vendors", "a", "home"));
    const b = await daemon(ctx, path.join(dir, "vendors", "b", "home"));
    const bystander = await daemon(ctx, path.join(dir, "elsewhere"));
    expect(readStat(a)?.sid).toBe(a); // its own session: not in any group of ours
    expect(findProcesses({ envEntries: [`HOME=${path.join(dir, "vendors", "a", "home")}`] })).toEqual([a]);
    expect(findProcesses({ envPrefix: `HOME=${path.join(dir, "vendors")}/` })).toEqual([a, b].sort((x, y) => x - y));
    expect(findProcesses({ argvIncludes: ["setInterval(()=>{},1<<30)"] })).toEqual(
      expect.arrayContaining([a, b, bystander]),
    );
    // This test process leads a tree of its own children, but is never reported.
    const self = { pid: process.pid, startTicks: processStartTicks(process.pid)! };
    const tree = findProcesses({ root: self });
    expect(tree).not.toContain(process.pid);
    // Detached children still descend from us by ppid until they are reparented.
    expect(tree).toEqual(expect.arrayContaining([a, b, bystander]));
  });

  it("sinceTicks leaves out processes started before the owner's first process", async (ctx) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-proc-"));
    ctx.onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const home = path.join(dir, "home");
    const older = await daemon(ctx, home);
    const olderTicks = processStartTicks(older)!;
    // Clock ticks are 10 ms: wait until a later process gets a later start time.
    let newer: number;
    for (;;) {
      newer = await daemon(ctx, home);
      if (processStartTicks(newer)! > olderTicks) break;
      process.kill(newer, "SIGKILL");
    }
    expect(findProcesses({ envEntries: [`HOME=${home}`] })).toEqual([older, newer].sort((x, y) => x - y));
    expect(findProcesses({ envEntries: [`HOME=${home}`], sinceTicks: processStartTicks(newer)! })).toEqual([newer]);
  });

  it("killProcesses kills everything the marker finds and nothing else", async (ctx) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "slaude-proc-"));
    ctx.onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const home = path.join(dir, "home");
    const ours = [await daemon(ctx, home), await daemon(ctx, home)];
    const bystander = await daemon(ctx, path.join(dir, "other"));
    expect(killProcesses({ envEntries: [`HOME=${home}`] })).toBe(2);
    expect(await waitDead(ours, 10_000)).toEqual([]);
    expect(isAlive(bystander)).toBe(true);
    expect(killProcesses({ envEntries: [`HOME=${home}`] })).toBe(0);
  });

  it("cpuTicks is the process's user plus system CPU time, in clock ticks (what the bench charges per call)", () => {
    const tickMs = 1000 / (Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100);
    const ticks0 = readStat(process.pid)!.cpuTicks;
    const cpu0 = process.cpuUsage();
    // Burn CPU time (not wall time): the figure is compared with Node's own CPU accounting.
    let x = 0;
    while ((process.cpuUsage(cpu0).user + process.cpuUsage(cpu0).system) / 1000 < 300) x += Math.sqrt(x + 1);
    const used = process.cpuUsage(cpu0);
    const usedMs = (used.user + used.system) / 1000;
    const ticksMs = (readStat(process.pid)!.cpuTicks - ticks0) * tickMs;
    expect(x).toBeGreaterThan(0);
    expect(ticksMs).toBeGreaterThanOrEqual(usedMs * 0.5);
    expect(ticksMs).toBeLessThanOrEqual(usedMs * 1.5 + 50);
  });
});
