import { existsSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import type { Service } from "../config/registry.js";
import { processStartTicks } from "../proc/proc.js";
import type { Connection } from "../store/records.js";
import { ChildLedger } from "./child-ledger.js";
import type { RenderedCredential } from "./credential-template.js";
import type { EraFound } from "./era.js";
import type { BackoffSource, VendorHandle, VendorLauncher } from "./launcher.js";

// The vendors `registry inspect` starts hold a credential (with --connection, a user's stored one).
// Each CLI run gets its own directory, `<dataDir>/run/inspect/<pid>-<start ticks>/`, with its own
// child ledger and the private HOMEs of its vendors: an interrupted run kills everything recorded or
// living under it, and a run whose CLI died without that (SIGKILL, a crash) is swept by the next
// inspect and by `serve` at start-up. The pid and start time name the owner, so a sweep never
// touches a run whose CLI is still running.

/** Where every inspection run's directory lies. */
export function inspectionsDir(dataDir: string): string {
  return path.join(dataDir, "run", "inspect");
}

/** This CLI run's directory: `<dataDir>/run/inspect/<pid>-<start ticks>` (the pid and start time name the owner). */
export function inspectionRunDir(dataDir: string): string {
  return path.join(inspectionsDir(dataDir), `${process.pid}-${processStartTicks(process.pid) ?? 0}`);
}

/**
 * One CLI run's vendors: the broker's launcher (built by the composition root's launcher builder,
 * src/app/launcher.ts) over this run's own directory and ledger.
 */
export class InspectionRun implements VendorLauncher {
  constructor(
    /** This run's directory (removed by close()). */
    readonly dir: string,
    private readonly ledger: ChildLedger,
    private readonly launcher: VendorLauncher & Pick<BackoffSource, "eraOf">,
  ) {}

  launch(connection: Connection, service: Service, secrets: RenderedCredential): Promise<VendorHandle> {
    return this.launcher.launch(connection, service, secrets);
  }

  /** The MCP era the service's vendor spoke when this run started it. */
  eraOf(service: string): EraFound | undefined {
    return this.launcher.eraOf?.(service);
  }

  /**
   * Kills every process of this run at once (SIGKILL): each recorded vendor's group and everything
   * whose HOME lies under the run's vendors directory, a detached grandchild included. Synchronous,
   * so a signal handler can call it before anything else; returns how many processes.
   */
  killAll(): number {
    return this.ledger.sweep();
  }

  /** Removes the run's directory; call after its vendors have stopped (or killAll). */
  close(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Most run directories one sweep looks at (each is one CLI run; far more means something else is wrong). */
const MAX_RUNS_SWEPT = 1_000;

/**
 * Kills what inspection runs whose CLI is gone left behind and removes their directories; runs whose
 * CLI still runs are left alone. Returns how many processes were killed.
 */
export function sweepInspections(dataDir: string): number {
  const root = inspectionsDir(dataDir);
  if (!existsSync(root)) return 0;
  let killed = 0;
  for (const name of readdirSync(root).slice(0, MAX_RUNS_SWEPT)) {
    const full = path.join(root, name);
    const run = /^(\d+)-(\d+)$/.exec(name);
    if (run) {
      const ticks = processStartTicks(Number(run[1]));
      if (ticks !== undefined && ticks === Number(run[2])) continue; // its CLI is still running
      killed += new ChildLedger(path.join(full, "children"), path.join(full, "vendors")).sweep();
      rmSync(full, { recursive: true, force: true });
    } else if (name === "children") {
      // The layout before each run had its own directory: one shared ledger and vendors directory.
      killed += new ChildLedger(full, path.join(root, "vendors")).sweep();
      rmSync(full, { recursive: true, force: true });
      rmSync(path.join(root, "vendors"), { recursive: true, force: true });
    }
  }
  return killed;
}
