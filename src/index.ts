// The library API of the `slaude-connect` package (its "exports" entry): what an embedding host
// imports by package name. Everything else under dist/ is internal and may change without notice.

/** Start the broker in-process: the composition root and what it returns. */
export { startApp, type AppOptions, type RunningApp } from "./app/app.js";
/** Configuration parsed from the environment (the same variables as the CLI). */
export { loadConfig, type Config, type SlackConfig } from "./config/env.js";
/** The embedding API: `broker.connectEmbedded(getCaller)` and `broker.serverForHost(getCaller)`. */
export { Broker, type EmbeddedCaller } from "./broker/broker.js";
/** The membership port (who is in which channel) and its ready-made adapters. */
export { CachedMembership, StaticMembership, noMembership, type MembershipSource } from "./membership/membership.js";
export { ChannelMembership, type ChannelRoster } from "./membership/channel-membership.js";
/** The approval port (how an owner is asked) and the channel that asks nobody. */
export { noApprovalChannel, type ApprovalChannel, type ApprovalOutcome } from "./approvals/channel.js";
export type { ApprovalCard } from "./approvals/card.js";
export type { Approval } from "./store/records.js";
/** Injected time and logging for hosts that want their own. */
export { systemClock, type Clock } from "./clock/clock.js";
export { createLogger, type Logger, type LogLevel, type LogFields } from "./log/logger.js";
/** The package version. */
export { VERSION } from "./domain/version.js";
