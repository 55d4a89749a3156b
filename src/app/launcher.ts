import { chmodSync, mkdirSync } from "node:fs";
import path from "node:path";
import type { Clock } from "../clock/clock.js";
import type { Config } from "../config/env.js";
import type { CallEventSink } from "../events/event-bus.js";
import type { Logger } from "../log/logger.js";
import { ChildLedger } from "../pool/child-ledger.js";
import { UidAllocator } from "../pool/child-sandbox.js";
import { InspectionRun, inspectionRunDir } from "../pool/inspect-run.js";
import { ProductionLauncher } from "../pool/launcher.js";

// The one builder of the launcher of real children: allowlisted env, private HOME/TMPDIR, process
// groups, child uids when root. The broker's pool and `registry inspect` both get theirs here.

/** What a launcher is built from. */
export interface LauncherSettings {
  readonly childBaseEnv: Readonly<Record<string, string>>;
  /** Where the vendors' private HOMEs live. */
  readonly vendorsDir: string;
  /** The directories from the data dir down to `vendorsDir`, which a child under its own uid must traverse. */
  readonly traversed: readonly string[];
  readonly ledger: ChildLedger;
  /** SLAUDE_CHILD_UID_BASE and how many uids from it; used only when running as root. */
  readonly uids: { readonly base: number | undefined; readonly count: number };
  readonly stopGraceMs?: number | undefined;
  readonly events?: CallEventSink;
  readonly clock: Clock;
  readonly log: Logger;
}

/** Builds the production launcher; as root with a uid base, its directories become execute-only for others. */
export function buildLauncher(s: LauncherSettings): ProductionLauncher {
  const base = s.uids.base;
  const perChildUid = base !== undefined && process.geteuid?.() === 0;
  if (perChildUid) {
    // Children under their own uids must traverse to their private HOME: execute-only, no listing.
    for (const d of s.traversed) {
      mkdirSync(d, { recursive: true, mode: 0o711 });
      chmodSync(d, 0o711);
    }
  }
  return new ProductionLauncher({
    baseEnv: s.childBaseEnv,
    runDir: s.vendorsDir,
    ledger: s.ledger,
    uids: perChildUid ? new UidAllocator(base, s.uids.count) : undefined,
    ...(s.stopGraceMs !== undefined ? { stopGraceMs: s.stopGraceMs } : {}),
    ...(s.events ? { events: s.events } : {}),
    clock: s.clock,
    log: s.log,
  });
}

/**
 * The launcher `registry inspect` uses: a fresh InspectionRun (its own directory and ledger under
 * `<dataDir>/run/inspect`, which a running broker's pool never sees). Its children run under the
 * uid just past the broker's range, so an inspected vendor never shares a uid with a live child.
 */
export function inspectionLauncher(config: Config, clock: Clock, log: Logger): InspectionRun {
  const dir = inspectionRunDir(config.dataDir);
  const vendorsDir = path.join(dir, "vendors");
  const ledger = new ChildLedger(path.join(dir, "children"), vendorsDir);
  const base = config.pool.childUidBase;
  const launcher = buildLauncher({
    childBaseEnv: config.childBaseEnv,
    vendorsDir,
    traversed: [config.dataDir, path.dirname(path.dirname(dir)), path.dirname(dir), dir, vendorsDir],
    ledger,
    uids: { base: base === undefined ? undefined : base + config.pool.maxChildren, count: 1 },
    clock,
    log,
  });
  return new InspectionRun(dir, ledger, launcher);
}
