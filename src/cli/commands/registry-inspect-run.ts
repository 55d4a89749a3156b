import { inspectionLauncher } from "../../app/launcher.js";
import type { Service } from "../../config/registry.js";
import type { VendorTool } from "../../config/tool-inspection.js";
import { eraText } from "../../pool/era.js";
import { PoolError } from "../../pool/errors.js";
import { InspectionInterrupted, listVendorTools, sweepInspections } from "../../pool/inspect.js";
import type { Connection } from "../../store/records.js";
import type { Credential } from "../../vault/credential.js";
import type { CliContext } from "../context.js";

// The vendor `registry inspect` starts holds a credential in its environment. Ctrl-C (SIGINT) or a
// SIGTERM must not leave it running: the CLI's default would exit at once and orphan the vendor's
// process group, which a terminal's Ctrl-C never reaches (it runs in its own group). So while the
// vendor may run, the signals kill every process of this run first, then the command unwinds.

/** The exit status of a command interrupted by `signal` (128 + its number, as a shell reports it). */
const EXIT_ON = { SIGINT: 130, SIGTERM: 143 } as const;

/**
 * Sweeps what interrupted runs left behind, starts `service`'s vendor with `credential` in a run of
 * its own, and returns its tools, or the exit status after printing why there are none. A SIGINT or
 * SIGTERM meanwhile kills the run's processes at once (a second one exits without waiting).
 */
export async function inspectVendor(
  ctx: CliContext,
  service: Service,
  connection: Connection,
  credential: Credential,
): Promise<VendorTool[] | number> {
  const swept = sweepInspections(ctx.config.dataDir);
  if (swept) ctx.err(`warning: killed ${swept} vendor process(es) an interrupted registry inspect left running`);
  const run = inspectionLauncher(ctx.config, ctx.clock, ctx.log);
  const interrupted = new AbortController();
  let received: keyof typeof EXIT_ON | undefined;
  const on = (signal: keyof typeof EXIT_ON) => (): void => {
    run.killAll();
    if (received) process.exit(EXIT_ON[signal]); // a second signal: the operator will not wait for the unwinding
    received = signal;
    interrupted.abort();
  };
  const onInt = on("SIGINT");
  const onTerm = on("SIGTERM");
  process.on("SIGINT", onInt);
  process.on("SIGTERM", onTerm);
  try {
    const tools = await listVendorTools(run, connection, service, credential, interrupted.signal);
    const era = run.eraOf(service.name);
    if (era) ctx.err(`${service.displayName} speaks ${eraText(era)}`);
    return tools;
  } catch (err) {
    if (received || err instanceof InspectionInterrupted) {
      ctx.err(
        `interrupted (${received ?? "signal"}): the ${service.displayName} vendor and every process it started were killed`,
      );
      return EXIT_ON[received ?? "SIGINT"];
    }
    // Our own messages only: a vendor's error text may echo the credential it was given.
    const why = err instanceof PoolError ? err.message : `the ${service.displayName} vendor failed to list its tools`;
    ctx.err(`error: ${why}`);
    return 1;
  } finally {
    process.off("SIGINT", onInt);
    process.off("SIGTERM", onTerm);
    // Whatever the vendor left (a detached grandchild under its HOME) dies with the run.
    run.killAll();
    run.close();
  }
}
