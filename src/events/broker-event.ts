import type { CallEvent, CallEventType } from "./call-event.js";
import {
  AUDIT_LIFECYCLE_TYPES,
  type AuditLifecycleEvent,
  VENDOR_LIFECYCLE_TYPES,
  type VendorLifecycleEvent,
} from "./lifecycle-event.js";

// Everything the one event stream carries: a call's events, the lifecycle events derived from
// audit rows, and the vendor events of the pool. Every kind has a team, which scopes who sees it.

/** One event on the stream (GET /v1/events). */
export type BrokerEvent = CallEvent | AuditLifecycleEvent | VendorLifecycleEvent;

/** The kinds of event, as named on the wire (`event:` of GET /v1/events). */
export type BrokerEventType = BrokerEvent["type"];

/** The kinds of call event, as a list (the docs test reads it). */
export const CALL_EVENT_TYPES = [
  "call.started",
  "call.progress",
  "approval.asked",
  "approval.decided",
  "call.ended",
] as const satisfies readonly CallEventType[];

// Fails to compile when a call event kind is added to the union but not to the list.
const everyCallType: Exclude<CallEventType, (typeof CALL_EVENT_TYPES)[number]> extends never ? true : never = true;
void everyCallType;

/** Every kind of event the stream carries. */
export const EVENT_TYPES: readonly BrokerEventType[] = [
  ...CALL_EVENT_TYPES,
  ...(Object.keys(AUDIT_LIFECYCLE_TYPES) as (keyof typeof AUDIT_LIFECYCLE_TYPES)[]),
  ...VENDOR_LIFECYCLE_TYPES,
];
