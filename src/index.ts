// The library API of the `slaude-connect` package (its "exports" entry): what an embedding host
// imports by package name. Everything else under dist/ is internal and may change without notice.

/** Start the broker in-process: the composition root and what it returns. */
export { type AppOptions, type RunningApp, startApp } from "./app/app.js";
export type { ApprovalCard } from "./approvals/card.js";
/** The approval port (how an owner is asked) and the channel that asks nobody. */
export { type ApprovalChannel, type ApprovalOutcome, noApprovalChannel } from "./approvals/channel.js";
/** The embedding API: `broker.connectEmbedded(getCaller)` and `broker.serverForHost(getCaller)`. */
export { Broker, type EmbeddedCaller } from "./broker/broker.js";
/** Injected time and logging for hosts that want their own. */
export { type Clock, systemClock } from "./clock/clock.js";
/** Configuration parsed from the environment (the same variables as the CLI). */
export { type Config, loadConfig, type SlackConfig } from "./config/env.js";
/** The package version. */
export { VERSION } from "./domain/version.js";
export { createLogger, type LogFields, type Logger, type LogLevel } from "./log/logger.js";
export { ChannelMembership, type ChannelRoster } from "./membership/channel-membership.js";
/** The membership port (who is in which channel) and its ready-made adapters. */
export { CachedMembership, type MembershipSource, noMembership, StaticMembership } from "./membership/membership.js";
export type { Approval } from "./store/records.js";
