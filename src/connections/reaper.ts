import type { Logger } from "../log/logger.js";
import type { Metrics } from "../metrics/metrics.js";

/** Passes still running past their deadline that the job tolerates before it skips runs again. */
const MAX_OVERDUE_PASSES = 4;

/**
 * A periodic job (TTL reaper, approval expiry, CLI revocations) that never overlaps itself within
 * a pass's deadline, never lets one hung pass block later runs, and never keeps the process alive.
 */
export class PeriodicJob {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private startedAt = 0;
  /** Passes abandoned past their deadline that have not settled yet (bounded by MAX_OVERDUE_PASSES). */
  private overdue = 0;

  /**
   * `deadlineMs` (default: the interval): after it, a pass still running no longer holds back the
   * next. `metrics` counts each settled pass by outcome.
   */
  constructor(
    private readonly name: string,
    private readonly intervalMs: number,
    private readonly run: () => Promise<unknown>,
    private readonly log: Logger,
    private readonly deadlineMs = intervalMs,
    private readonly metrics?: Pick<Metrics, "jobRan">,
  ) {}

  /** Runs once now, then every interval. */
  start(): void {
    if (this.timer) return;
    void this.tick();
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
  }

  /** Runs one pass now; skipped while one is in flight within its deadline. Settles when this pass does, or at its deadline. */
  async tick(): Promise<void> {
    if (this.running) {
      if (Date.now() - this.startedAt < this.deadlineMs) return;
      if (this.overdue >= MAX_OVERDUE_PASSES) {
        this.log.error(`${this.name} skipped: earlier passes are still hung`, { overdue: this.overdue });
        return;
      }
      // The hung pass is left to finish on its own; it no longer blocks this job.
      this.log.error(`${this.name} pass overran its deadline; running again`, { deadlineMs: this.deadlineMs });
      this.overdue++;
      void this.running.finally(() => this.overdue--);
    }
    const t0 = performance.now();
    const pass: Promise<unknown> = this.run().then(
      () => this.metrics?.jobRan(this.name, "ok", (performance.now() - t0) / 1000),
      (err: unknown) => {
        this.metrics?.jobRan(this.name, "failed", (performance.now() - t0) / 1000);
        this.log.error(`${this.name} failed`, { error: (err as Error).message });
      },
    );
    this.running = pass;
    this.startedAt = Date.now();
    void pass.finally(() => {
      if (this.running === pass) this.running = undefined;
    });
    await this.bounded(pass);
  }

  /** Stops the timer and waits for a pass in flight, at most its deadline. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.running) await this.bounded(this.running);
  }

  private async bounded(p: Promise<unknown>): Promise<void> {
    let settled = false;
    void p.then(
      () => (settled = true),
      () => (settled = true),
    );
    // A timer may fire a fraction of a millisecond before Date.now() reaches the deadline; wait on
    // until it has, so the next tick sees this pass as overdue rather than skipping as in flight.
    for (let left = this.startedAt + this.deadlineMs - Date.now(); !settled && left > 0; left = this.startedAt + this.deadlineMs - Date.now()) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([p, new Promise<void>((r) => (timer = setTimeout(r, left)))]);
      clearTimeout(timer);
    }
  }
}
