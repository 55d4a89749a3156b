// The closed set of per-tenant limits: the metric label values and the refusal reasons.

/** Every per-tenant limit the broker enforces; the only values of the `limit` metric label. */
export const LIMIT_KINDS = [
  "call_rate_user",
  "call_rate_team",
  "children",
  "logins",
  "mcp_sessions",
  "event_streams",
] as const;

/** One per-tenant limit. */
export type LimitKind = (typeof LIMIT_KINDS)[number];

/** Reports a refusal by a per-tenant limit (the metrics port's `limitRefused`; never a team id). */
export type LimitRefusals = (limit: LimitKind) => void;
