import { z } from "zod";

// Signals between replicas: a small, fixed set of "look again" hints. The database stays the
// source of truth: a receiver always re-reads the row a signal names before acting, so a forged,
// duplicated or lost signal can only cause an extra read or a delay (the polls are the safety net),
// never a decision. On PostgreSQL the wire is sealed under the key ring (signal-seal.ts), since every
// role that may connect can LISTEN and NOTIFY: ids never travel in clear, forgeries never arrive.

const id = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/);
// Slack events may lack a team id (the handler passes ""), so a team may be empty; a channel may not.
const slackId = z.string().regex(/^[A-Za-z0-9_.-]{0,64}$/);

/** The payload schema of each topic (strict: unknown fields are refused on receipt). */
export const SIGNAL_PAYLOADS = {
  /** An approval was decided in the database: the replica whose call waits on it reads it now. */
  approval_decided: z.object({ approvalId: id }).strict(),
  /** A connection ended (revoke, replace, expiry): every replica re-reads it and kills its child. */
  connection_ended: z.object({ connectionId: id }).strict(),
  /** A channel's membership changed: every replica forgets its cached roster of that channel. */
  membership_changed: z.object({ teamId: slackId, channelId: slackId.min(1) }).strict(),
  /** A client cancelled a request of an MCP session: the replica running it aborts it (the session check stays local). */
  call_cancelled: z
    .object({
      sessionId: z.string().regex(/^[A-Za-z0-9-]{1,64}$/),
      requestId: z.union([z.string().max(128), z.number().int().safe()]),
    })
    .strict(),
} as const;

/** The topics a signal can have. */
export type SignalTopic = keyof typeof SIGNAL_PAYLOADS;

/** What a signal of topic `T` carries. */
export type SignalPayload<T extends SignalTopic> = z.infer<(typeof SIGNAL_PAYLOADS)[T]>;

/** Receives the signals of one topic; a rejection is logged, never propagated to the sender. */
export type SignalHandler<T extends SignalTopic> = (payload: SignalPayload<T>) => void | Promise<void>;

/**
 * The port: publish a signal to every replica (this one included, so one code path serves one
 * process and many), subscribe to a topic, and hear about gaps (a lost LISTEN connection, a
 * dropped backlog) after which consumers must re-read the database, because signals were missed.
 */
export interface ClusterSignals {
  /** Sends a signal after the change it reports has committed; never rejects (a lost signal only delays). */
  publish<T extends SignalTopic>(topic: T, payload: SignalPayload<T>): Promise<void>;
  /** Runs `handler` for every valid signal of `topic`; returns the unsubscribe function. */
  subscribe<T extends SignalTopic>(topic: T, handler: SignalHandler<T>): () => void;
  /** Runs `handler` after signals may have been missed; returns the unsubscribe function. */
  onGap(handler: () => void | Promise<void>): () => void;
  /** Starts receiving (the PostgreSQL adapter LISTENs); a publisher-only process (the CLI) never calls it. */
  start(): Promise<void>;
  /** Stops receiving; later publishes are dropped. */
  close(): Promise<void>;
}

/** The most bytes one encoded signal may have (PostgreSQL's NOTIFY limit is 8000; ours are far smaller). */
export const MAX_SIGNAL_BYTES = 1024;

const envelope = z.discriminatedUnion("topic", [
  z.object({ topic: z.literal("approval_decided"), payload: SIGNAL_PAYLOADS.approval_decided }).strict(),
  z.object({ topic: z.literal("connection_ended"), payload: SIGNAL_PAYLOADS.connection_ended }).strict(),
  z.object({ topic: z.literal("membership_changed"), payload: SIGNAL_PAYLOADS.membership_changed }).strict(),
  z.object({ topic: z.literal("call_cancelled"), payload: SIGNAL_PAYLOADS.call_cancelled }).strict(),
]);

/** A decoded, validated signal. */
export type Signal = z.infer<typeof envelope>;

/** Encodes a signal for the wire; undefined when the payload does not match its topic's schema or is too big. */
export function encodeSignal<T extends SignalTopic>(topic: T, payload: SignalPayload<T>): string | undefined {
  const parsed = envelope.safeParse({ topic, payload });
  if (!parsed.success) return undefined;
  const text = JSON.stringify(parsed.data);
  return Buffer.byteLength(text) <= MAX_SIGNAL_BYTES ? text : undefined;
}

/** Decodes a received signal; undefined for anything oversized, not JSON, or not exactly a known shape. */
export function decodeSignal(text: string): Signal | undefined {
  if (Buffer.byteLength(text) > MAX_SIGNAL_BYTES) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = envelope.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}
