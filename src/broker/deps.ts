import type { ApprovalService } from "../approvals/approval-service.js";
import type { Clock } from "../clock/clock.js";
import type { CacheLimits } from "../config/env.js";
import type { ServiceRegistry } from "../config/registry.js";
import type { ConnectionLifecycle } from "../connections/lifecycle.js";
import type { ThreadRef } from "../domain/thread.js";
import type { CallEventSink } from "../events/event-bus.js";
import type { ResultLimits } from "../hygiene/truncate.js";
import type { CallRateGate } from "../limits/call-rate.js";
import type { Logger } from "../log/logger.js";
import type { MembershipSource } from "../membership/membership.js";
import type { Metrics } from "../metrics/metrics.js";
import type { PinService } from "../pinning/service.js";
import type { BackoffSource } from "../pool/launcher.js";
import type { VendorPool } from "../pool/pool.js";
import type { ResultStore } from "../results/result-store.js";
import type { Store } from "../store/store.js";
import type { TurnStore } from "../turns/turn-store.js";
import type { Vault } from "../vault/vault.js";
import type { CallTrace } from "./call-trace.js";
import type { CompletionBacklog } from "./completion-backlog.js";
import type { ConsentNotifier, CredentialRefresher, LeftoverSweeper } from "./ports.js";
import type { FactsAhead } from "./tool-request.js";

/**
 * Everything the broker and its call path are built from, adapters included: the one settings
 * object, built once by the composition root (src/app/broker-factory.ts) and held as it is; tests
 * pass fakes (an in-memory launcher under a real pool, say).
 */
export interface BrokerDeps {
  readonly store: Store;
  readonly vault: Vault;
  readonly registry: ServiceRegistry;
  readonly lifecycle: ConnectionLifecycle;
  readonly pool: VendorPool;
  readonly approvals: ApprovalService;
  readonly membership: MembershipSource;
  readonly turns: TurnStore;
  readonly clock: Clock;
  readonly log: Logger;
  /** Where each call's outcome and timings go (noMetrics unless the app wires Prometheus). */
  readonly metrics: Metrics;
  /** The call event stream (src/events): started, progress, approval asked/decided, ended. */
  readonly events: CallEventSink;
  readonly limits: ResultLimits;
  /** Keeps the full (redacted) text of truncated results for their caller and thread (src/results). */
  readonly results: ResultStore;
  readonly callTimeoutMs: number;
  /** Refreshes OAuth credentials near expiry, one refresh per connection at a time (src/login/oauth). */
  readonly refresher?: CredentialRefresher;
  /** The remote-vendor backoff of a connection, if any (reported by connections_list). */
  readonly backoff: BackoffSource;
  /** Tool definition pins: the call path refuses a quarantined tool and checks the leased vendor's definition. */
  readonly pins: PinService;
  /** Kills vendor processes a crashed predecessor left behind, at start. */
  readonly ledger: LeftoverSweeper;
  /** Delivers the consent card for `connect` (Slack in production). */
  readonly consent?: ConsentNotifier;
  /** Bounds the decrypted-credential cache (SLAUDE_CREDENTIAL_CACHE_*); defaults 1,000 entries, 15 min. */
  readonly credentialCache?: CacheLimits;
  /** Where completion rows wait while the database is away; default one per call service with DEFAULT_COMPLETION_BACKLOG. */
  readonly completions?: CompletionBacklog;
  /** The call rate per user and per team, checked before anything else of a call (src/limits); unset: no rate limit. */
  readonly callRate?: CallRateGate;
}

/** Who is calling, read live for each call: the session's thread and the user whose turn it is. */
export interface CallerContext {
  readonly thread: ThreadRef;
  readonly userId: string | undefined;
}

/** The per-request bits of an MCP tool call the broker forwards: cancellation and progress. */
export interface CallExtra {
  readonly signal?: AbortSignal;
  readonly progress?: (p: { progress: number; total?: number; message?: string }) => Promise<void>;
  /** The call's id and timings; set by the call service for the stages of one call. */
  readonly trace?: CallTrace;
  /** The request's logger (its `requestId` bound); the call binds its `callId` on top. */
  readonly log?: Logger;
  /** The facts the MCP endpoint read ahead for this request (see FactsAhead). */
  readonly ahead?: FactsAhead;
}
