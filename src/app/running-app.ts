// The composition root's two shapes: what a caller may override, and what a running app exposes.

import type { ApprovalChannel } from "../approvals/channel.js";
import type { Broker } from "../broker/broker.js";
import type { Clock } from "../clock/clock.js";
import type { Config } from "../config/env.js";
import type { ServiceRegistry } from "../config/registry.js";
import type { ConnectionLifecycle } from "../connections/lifecycle.js";
import type { Logger } from "../log/logger.js";
import type { LoginBrowserFactory, LoginService, OAuthFlowFactory } from "../login/login-service.js";
import type { MembershipSource } from "../membership/membership.js";
import type { PrometheusMetrics } from "../metrics/prometheus.js";
import type { EventsEndpoint } from "../server/events-endpoint.js";
import type { McpEndpoint } from "../server/mcp-endpoint.js";
import type { Store } from "../store/store.js";
import type { TenantDirectory } from "../tenancy/tenant-directory.js";
import type { LocalWorkspace } from "../workspace/local/model.js";

/** Overrides for the composition root; production uses the defaults. */
export interface AppOptions {
  readonly config: Config;
  readonly clock?: Clock;
  readonly log?: Logger;
  readonly registry?: ServiceRegistry;
  /** How often the TTL reaper runs. */
  readonly reapIntervalMs?: number;
  /** Channel membership (Slack in production); without one nobody is a member (fail closed). */
  readonly membership?: MembershipSource;
  /** How owners are asked to approve borrows (Slack in production); without one borrows needing approval are refused. */
  readonly approvalChannel?: ApprovalChannel;
  /** Launches login browsers (Chromium through playwright-core by default). */
  readonly browsers?: LoginBrowserFactory;
  /** Starts OAuth flows (src/login/oauth by default). */
  readonly oauth?: OAuthFlowFactory;
  /** How often Slack's auth.test is repeated for /readyz (default 60 s). */
  readonly slackAuthCheckIntervalMs?: number;
  /** The effective uid the root rule judges (default: the process's own). */
  readonly euid?: number;
  /** How often waiting calls look for decisions made by another process, e.g. the CLI (default 1 s). */
  readonly approvalPollIntervalMs?: number;
  /** How often the lifecycle events of committed audit rows are read for GET /v1/events (default 1 s). */
  readonly eventTailIntervalMs?: number;
  /** How often the broker re-reads the connections of its live children (default 15 s; signals end them sooner). */
  readonly idleReapIntervalMs?: number;
  /** Tenant facts for the host-token guard (default: one installation, no org; src/tenancy/tenant-directory.ts). */
  readonly tenants?: TenantDirectory;
}

/** A running broker process. */
export interface RunningApp {
  readonly port: number;
  readonly url: string;
  readonly store: Store;
  readonly lifecycle: ConnectionLifecycle;
  readonly broker: Broker;
  readonly logins: LoginService;
  /** This app's metrics (its own prom-client Registry), served at GET /metrics. */
  readonly metrics: PrometheusMetrics;
  /** The MCP endpoint (its open sessions). */
  readonly mcp: McpEndpoint;
  /** Which workspace serves people; `local` is the local workspace (development only) the console shows. */
  readonly workspace: { readonly kind: "slack" | "local" | "none"; readonly local?: LocalWorkspace };
  /** GET /v1/events (its open streams). */
  readonly events: EventsEndpoint;
  /** A host token this broker accepts (the development token, else the first configured), for an in-process agent host such as the console. */
  readonly hostToken: string | undefined;
  /** The development host token file, when one is in use. */
  readonly hostTokenFile: string | undefined;
  /** The start-up block (console link, MCP URL, host token file, Inspector command); `serve` prints it last. */
  readonly banner: string;
  /** Graceful stop: HTTP closed, reapers stopped, children killed, database closed. */
  close(): Promise<void>;
}
