import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { ServiceRegistry } from "../config/registry.js";
import { LIMIT_KINDS, type LimitKind } from "../limits/limit-kind.js";
import type { CallMetric, Metrics } from "./metrics.js";

// The prom-client adapter of the metrics port. Each app has its own Registry (never prom-client's
// global one: several apps run in one test process). Every label value comes from a closed set:
// service names from the registry, tool names the registry lists for that service, outcome and
// decision codes matched against a code pattern; anything else becomes "unknown" or "other", so a
// model inventing names cannot grow the series, and no user id, thread or argument is ever a label.

const CODE = /^[a-z][a-z_]{0,39}$/;
const VIA = new Set(["own", "grant", "shared", "approval_once", "approval_thread", "none"]);
const DECISIONS = new Set(["allowed_thread", "allowed_once", "denied", "expired"]);
const JOBS = new Set([
  "ttl_reaper",
  "idle_reaper",
  "login_reaper",
  "cache_sweep",
  "slack_auth_check",
  "result_reaper",
  "approval_expiry",
  "approval_decisions",
  "turn_reaper",
  "tool_relist",
  "slack_token_rotation",
  "install_state_sweep",
]);
const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const HUMAN_SECONDS = [1, 5, 10, 30, 60, 120, 300, 600];

/** A job's metric label: its name with underscores, from the closed set, else "other". */
function jobLabel(job: string): string {
  const name = job.replace(/\s+/g, "_");
  return JOBS.has(name) ? name : "other";
}

/** Live figures read at scrape time from the running parts. */
export interface MetricSources {
  pool?(): { live: number; leased: number; stopping: number; spawned: number; waiting: number };
  approvalsPending?(): number;
  logins?(): { flows: number; browsers: number };
  /** The store's running statement and write-transaction counts (SQLite: dbCounts). */
  db?(): { statements: number; transactions: number };
  /** Whether this replica leads each leader-only job (src/jobs/leadership.ts). */
  leadership?(): ReadonlyMap<string, boolean>;
  /** How many tenants (users for call_rate_user) are at each per-tenant limit right now: a count, never their ids. */
  tenantsAtLimit?(): Partial<Record<LimitKind, number>>;
}

/** Metrics in Prometheus text format over a private Registry; `text()` is what GET /metrics serves. */
export class PrometheusMetrics implements Metrics {
  readonly registry = new Registry();
  private readonly calls: Counter<"service" | "tool" | "outcome" | "via">;
  private readonly brokerTime: Histogram<"service">;
  private readonly vendorTime: Histogram<"service">;
  private readonly poolWaits: Counter<"outcome">;
  private readonly poolWaitTime: Histogram;
  private readonly decisions: Histogram<"decision">;
  private readonly auditFailures: Counter<"event">;
  private readonly jobs: Counter<"job" | "outcome">;
  private readonly jobTime: Histogram<"job">;
  private readonly tokenRefreshes: Counter<"outcome">;
  private readonly limitRefusals: Counter<"limit">;
  private sources: MetricSources = {};

  constructor(private readonly services: ServiceRegistry) {
    const registers = [this.registry];
    this.calls = new Counter({
      name: "slaude_calls_total",
      help: "mcp_call requests by service, tool, outcome and how they ran",
      labelNames: ["service", "tool", "outcome", "via"],
      registers,
    });
    this.brokerTime = new Histogram({
      name: "slaude_call_broker_seconds",
      help: "Time an mcp_call spent in the broker (policy, audit, pool, spawn, redaction), without the vendor's answer and without waiting for an owner",
      labelNames: ["service"],
      buckets: SECONDS,
      registers,
    });
    this.vendorTime = new Histogram({
      name: "slaude_call_vendor_seconds",
      help: "The vendor's tools/call round trip of an mcp_call",
      labelNames: ["service"],
      buckets: SECONDS,
      registers,
    });
    this.poolWaits = new Counter({
      name: "slaude_pool_waits_total",
      help: "Calls that waited for a free vendor slot, by whether they got one",
      labelNames: ["outcome"],
      registers,
    });
    this.poolWaitTime = new Histogram({
      name: "slaude_pool_wait_seconds",
      help: "How long calls waited for a free vendor slot",
      buckets: SECONDS,
      registers,
    });
    this.decisions = new Histogram({
      name: "slaude_approval_decision_seconds",
      help: "Time from asking an owner to the decision (or expiry), by decision",
      labelNames: ["decision"],
      buckets: HUMAN_SECONDS,
      registers,
    });
    this.auditFailures = new Counter({
      name: "slaude_audit_write_failures_total",
      help: "Best-effort audit rows that could not be written, by event kind",
      labelNames: ["event"],
      registers,
    });
    this.tokenRefreshes = new Counter({
      name: "slaude_slack_token_refreshes_total",
      help: "Slack installation token refreshes (rotation), by outcome",
      labelNames: ["outcome"],
      registers,
    });
    this.jobs = new Counter({
      name: "slaude_job_runs_total",
      help: "Passes of the periodic jobs (reapers), by outcome",
      labelNames: ["job", "outcome"],
      registers,
    });
    this.jobTime = new Histogram({
      name: "slaude_job_seconds",
      help: "Duration of one pass of a periodic job",
      labelNames: ["job"],
      buckets: SECONDS,
      registers,
    });
    this.limitRefusals = new Counter({
      name: "slaude_limit_refusals_total",
      help: "Requests refused by a per-tenant limit, by limit (never by team)",
      labelNames: ["limit"],
      registers,
    });
    const self = this;
    const atLimit = new Gauge({
      name: "slaude_tenants_at_limit",
      help: "Tenants at each per-tenant limit right now (users for call_rate_user), as this replica sees them: a count, never their ids",
      labelNames: ["limit"],
      registers,
      collect() {
        const counts = self.sources.tenantsAtLimit?.();
        if (!counts) return;
        for (const limit of LIMIT_KINDS) {
          const n = counts[limit];
          if (n !== undefined) atLimit.set({ limit }, n);
        }
      },
    });
    const vendors = new Gauge({
      name: "slaude_vendors",
      help: "Vendors (stdio children and remote sessions) in the pool, by state",
      labelNames: ["state"],
      registers,
      collect() {
        const s = self.sources.pool?.();
        if (!s) return;
        vendors.set({ state: "live" }, s.live);
        vendors.set({ state: "leased" }, s.leased);
        vendors.set({ state: "stopping" }, s.stopping);
      },
    });
    const waiting = new Gauge({
      name: "slaude_pool_waiting",
      help: "Calls waiting for a free vendor slot right now",
      registers,
      collect() {
        const s = self.sources.pool?.();
        if (s) waiting.set(s.waiting);
      },
    });
    const spawned = new Gauge({
      name: "slaude_vendor_starts",
      help: "Vendors started since the process started",
      registers,
      collect() {
        const s = self.sources.pool?.();
        if (s) spawned.set(s.spawned);
      },
    });
    const pending = new Gauge({
      name: "slaude_approvals_pending",
      help: "Approvals this process is waiting on (a borrower's call is held until the owner decides)",
      registers,
      collect() {
        const n = self.sources.approvalsPending?.();
        if (n !== undefined) pending.set(n);
      },
    });
    const logins = new Gauge({
      name: "slaude_logins",
      help: "Login flows in progress and the confined browsers they hold",
      labelNames: ["kind"],
      registers,
      collect() {
        const l = self.sources.logins?.();
        if (!l) return;
        logins.set({ kind: "flows" }, l.flows);
        logins.set({ kind: "browsers" }, l.browsers);
      },
    });
    const leader = new Gauge({
      name: "slaude_job_leader",
      help: "1 while this replica leads the job (runs its passes on the shared database), 0 while another replica does",
      labelNames: ["job"],
      registers,
      collect() {
        for (const [job, leads] of self.sources.leadership?.() ?? []) leader.set({ job: jobLabel(job) }, leads ? 1 : 0);
      },
    });
    // Counters read from the store's own running totals: each scrape adds what ran since the last one.
    const seen = { statements: 0, transactions: 0 };
    for (const [key, name, help] of [
      [
        "statements",
        "slaude_db_statements_total",
        "SQL statements the store executed (prepared-statement runs; BEGIN/COMMIT not included)",
      ],
      ["transactions", "slaude_db_transactions_total", "Write transactions the store committed"],
    ] as const) {
      const counter: Counter = new Counter({
        name,
        help,
        registers,
        collect() {
          const now = self.sources.db?.()[key];
          if (now === undefined || now < seen[key]) return;
          counter.inc(now - seen[key]);
          seen[key] = now;
        },
      });
    }
  }

  /** Connects the live figures (pool, approvals, logins) once the parts exist. */
  watch(sources: MetricSources): void {
    this.sources = { ...this.sources, ...sources };
  }

  /** The exposition text and its content type. */
  async text(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  callFinished(c: CallMetric): void {
    const service = this.services.get(c.service);
    const serviceLabel = service ? service.name : "unknown";
    const tool = service && Object.hasOwn(service.entry.tools, c.tool) ? c.tool : "other";
    this.calls.inc({
      service: serviceLabel,
      tool,
      outcome: CODE.test(c.outcome) ? c.outcome : "other",
      via: VIA.has(c.via) ? c.via : "other",
    });
    this.brokerTime.observe({ service: serviceLabel }, c.brokerSeconds);
    if (c.vendorSeconds !== undefined) this.vendorTime.observe({ service: serviceLabel }, c.vendorSeconds);
  }

  poolWaited(seconds: number, outcome: "slot" | "timeout"): void {
    this.poolWaits.inc({ outcome });
    this.poolWaitTime.observe(seconds);
  }

  approvalDecided(decision: string, seconds: number): void {
    this.decisions.observe({ decision: DECISIONS.has(decision) ? decision : "other" }, Math.max(0, seconds));
  }

  /** A Slack installation's rotating token was refreshed, or the refresh failed (no team label: bounded). */
  slackTokenRefreshed(outcome: "ok" | "failed"): void {
    this.tokenRefreshes.inc({ outcome });
  }

  auditWriteFailed(event: string): void {
    this.auditFailures.inc({ event: CODE.test(event) ? event : "other" });
  }

  limitRefused(limit: LimitKind): void {
    this.limitRefusals.inc({ limit: LIMIT_KINDS.includes(limit) ? limit : "other" });
  }

  jobRan(job: string, outcome: "ok" | "failed", seconds: number): void {
    const label = jobLabel(job);
    this.jobs.inc({ job: label, outcome });
    this.jobTime.observe({ job: label }, seconds);
  }
}
