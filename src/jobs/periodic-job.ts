import type { Clock, Timer } from "../clock/clock.js";
import { errorMessage } from "../domain/errors.js";
import type { Logger } from "../log/logger.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Leadership } from "./leadership.js";

/** Passes still running past their deadline that the job tolerates before it skips runs again. */
const MAX_OVERDUE_PASSES = 4;

/** What a periodic job runs, how often, and on which clock. */
export interface PeriodicJobOptions {
  /** Names the job in logs and in the `slaude_job_runs_total` metric. */
  readonly name: string;
  readonly intervalMs: number;
  readonly run: () => Promise<unknown>;
  readonly log: Logger;
  /** Arms the interval and the deadline, and times each pass: tests advance it instead of waiting. */
  readonly clock: Clock;
  /** After it (default: the interval), a pass still running no longer holds back the next. */
  readonly deadlineMs?: number;
  /** Counts each settled pass by outcome. */
  readonly metrics?: Pick<Metrics, "jobRan">;
  /** Set for a job on the shared database: a pass runs only while this replica leads the job. */
  readonly leadership?: Pick<Leadership, "lead">;
}

/**
 * A periodic job (TTL reaper, idle reaper, session sweep, revocations) that never overlaps itself
 * within a pass's deadline, never lets one hung pass block later runs, and never keeps the process alive.
 */
export class PeriodicJob {
  private timer: Timer | undefined;
  private running: Promise<unknown> | undefined;
  private startedAt = 0;
  /** Passes abandoned past their deadline that have not settled yet (bounded by MAX_OVERDUE_PASSES). */
  private overdue = 0;
  private readonly deadlineMs: number;

  constructor(private readonly o: PeriodicJobOptions) {
    this.deadlineMs = o.deadlineMs ?? o.intervalMs;
  }

  /** Runs once now, then every interval. */
  start(): void {
    if (this.timer) return;
    void this.tick();
    this.timer = this.o.clock.setInterval(() => void this.tick(), this.o.intervalMs, { unref: true });
  }

  /** Runs one pass now; skipped while one is in flight within its deadline. Settles when this pass does, or at its deadline. */
  async tick(): Promise<void> {
    const { clock, log, name } = this.o;
    if (this.running) {
      if (clock.now() - this.startedAt < this.deadlineMs) return;
      if (this.overdue >= MAX_OVERDUE_PASSES) {
        log.error(`${name} skipped: earlier passes are still hung`, { overdue: this.overdue });
        return;
      }
      // The hung pass is left to finish on its own; it no longer blocks this job.
      log.error(`${name} pass overran its deadline; running again`, { deadlineMs: this.deadlineMs });
      this.overdue++;
      void this.running.finally(() => this.overdue--);
    }
    const startedAt = clock.now();
    let t0 = startedAt;
    const pass: Promise<unknown> = this.attempt(() => (t0 = clock.now())).then(
      (didRun) => {
        if (didRun) this.o.metrics?.jobRan(name, "ok", (clock.now() - t0) / 1000);
      },
      (err: unknown) => {
        this.o.metrics?.jobRan(name, "failed", (clock.now() - t0) / 1000);
        log.error(`${name} failed`, { error: errorMessage(err) });
      },
    );
    this.running = pass;
    this.startedAt = startedAt;
    void pass.finally(() => {
      if (this.running === pass) this.running = undefined;
    });
    await this.bounded(pass);
  }

  /** One pass: leadership first when the job has it (inside the pass, so under its deadline); resolves whether it ran. */
  private async attempt(started: () => void): Promise<boolean> {
    if (this.o.leadership && !(await this.o.leadership.lead(this.o.name))) return false;
    started();
    await this.o.run();
    return true;
  }

  /** Stops the timer and waits for a pass in flight, at most its deadline. */
  async stop(): Promise<void> {
    this.timer?.cancel();
    this.timer = undefined;
    if (this.running) await this.bounded(this.running);
  }

  private async bounded(p: Promise<unknown>): Promise<void> {
    const { clock } = this.o;
    let settled = false;
    void p.then(
      () => (settled = true),
      () => (settled = true),
    );
    // A real timer may fire a fraction of a millisecond before the wall clock reaches the deadline;
    // wait on until it has, so the next tick sees this pass as overdue rather than skipping as in flight.
    for (
      let left = this.startedAt + this.deadlineMs - clock.now();
      !settled && left > 0;
      left = this.startedAt + this.deadlineMs - clock.now()
    ) {
      let timer: Timer | undefined;
      await Promise.race([p, new Promise<void>((r) => (timer = clock.setTimeout(r, left)))]);
      timer?.cancel();
    }
  }
}
