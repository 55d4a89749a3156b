import type { Installations } from "../installations/installations.js";
import { PeriodicJob } from "../jobs/periodic-job.js";
import type { Core } from "./build-core.js";
import type { TopologyParts } from "./build-topology.js";
import type { Parts } from "./parts.js";
import { tenantJobs } from "./slack-tenants.js";
import type { Stoppable } from "./stop-stack.js";

// Every periodic job runs on the app's clock, never overlapping itself; a builder starts its jobs
// and its stop stops them. A `leaderOnly` job sweeps the shared database: one replica at a time
// runs it (src/jobs/leadership.ts). The jobs builder holds the sweeps nobody else owns.

/** Starts one periodic job now (a first pass at once, then every `intervalMs`). */
export type StartJob = (
  name: string,
  intervalMs: number,
  run: () => Promise<unknown>,
  leaderOnly?: boolean,
) => PeriodicJob;

/** The job starter of this app: its clock, log, metrics and (for leader-only jobs) leadership. */
export function jobStarter(core: Core, topology: TopologyParts): StartJob {
  const { log, clock, metrics } = core;
  return (name, intervalMs, run, leaderOnly = false) => {
    const leadership = leaderOnly ? { leadership: topology.leadership } : {};
    const j = new PeriodicJob({ name, intervalMs, run, log, clock, metrics, ...leadership });
    j.start();
    return j;
  };
}

/** Stops `jobs` one after another (each waits for its pass in flight, within its deadline). */
export async function stopJobs(jobs: readonly (PeriodicJob | undefined)[]): Promise<void> {
  for (const j of jobs) await j?.stop();
}

/** Starts the reapers of expired rows, the tenants' jobs and the membership cache sweep. */
export function buildJobs(p: Pick<Parts, "core" | "workspace" | "broker" | "job">): Stoppable {
  const { core, workspace: w, job } = p;
  const { opts, config, store, clock } = core;
  const { lifecycle, broker, results } = p.broker;
  const every = opts.reapIntervalMs ?? 30_000;
  const installations: Installations | undefined = w.workspace.installations;
  const jobs = [
    job("ttl reaper", every, () => lifecycle.reapExpired(), true),
    // Stored results past their TTL are deleted (secure_delete overwrites them on disk).
    job("result reaper", every, () => results.reap(), true),
    // Threads idle past the turn max age leave the shared turn table (PostgreSQL; memory's LRU bounds itself).
    job("turn reaper", every, () => broker.turns.reap(clock.now()), true),
    // Pending approvals past their expiry whose caller is gone (a replica killed while a call waited).
    job("approval expiry", every, () => broker.approvals.expireDue(), true),
    ...(installations ? tenantJobs(job, installations, config, store, clock) : []),
    // Expired membership answers leave memory even for channels nobody asks about again.
    job("cache sweep", 60_000, async () => w.membershipCache?.sweep()),
  ];
  return { stop: () => stopJobs(jobs) };
}
