import type { Clock } from "../clock/clock.js";
import type { Service } from "../config/registry.js";
import type { CallEventSink } from "../events/event-bus.js";
import { remoteUnavailable, vendorTag } from "../events/vendor-events.js";
import type { Logger } from "../log/logger.js";
import type { Connection } from "../store/records.js";
import type { AvailabilityBook } from "./availability.js";
import { PoolError } from "./errors.js";
import { failureClass, httpStatusOf } from "./remote.js";

/** What a refused remote connect is recorded in and announced to. */
export interface RefusalDeps {
  readonly book: AvailabilityBook;
  readonly clock: Clock;
  readonly log: Logger;
  readonly events?: CallEventSink | undefined;
}

/**
 * The pool's refusal of a remote connect that failed (other than by a version mismatch): a 401 or 403
 * marks the credential rejected, anything else counts towards the connection's backoff. The first of
 * either is announced as `remote.unavailable`.
 */
export function refuseRemoteConnect(
  d: RefusalDeps,
  connection: Connection,
  service: Service,
  cause: unknown,
): PoolError {
  const status = httpStatusOf(cause);
  const lastError = failureClass(cause);
  if (status === 401 || status === 403) {
    // The vendor refused this credential: waiting will not fix it, a new login will.
    if (d.book.of(connection.id)?.reason !== "credential_rejected")
      d.events?.emit(
        remoteUnavailable(vendorTag(connection, service), "credential_rejected", lastError, null, d.clock.now()),
      );
    d.book.credentialRejected(connection.id, lastError);
    d.log.warn("remote vendor rejected the credential", {
      service: service.name,
      connectionId: connection.id,
      error: lastError,
    });
    return new PoolError(
      "credential_rejected",
      `${service.displayName} rejected the stored credential (${lastError})`,
      { cause, detail: lastError },
    );
  }
  const next = d.book.connectFailed(connection.id, lastError);
  if (next.failures === 1)
    d.events?.emit(
      remoteUnavailable(vendorTag(connection, service), "backoff", lastError, next.retryAt, d.clock.now()),
    );
  d.log.warn("remote vendor connect failed", {
    service: service.name,
    connectionId: connection.id,
    failures: next.failures,
    error: lastError,
  });
  return new PoolError(
    "vendor_unreachable",
    `${service.displayName} is unreachable (${lastError}); retrying after ${new Date(next.retryAt).toISOString()}`,
    {
      cause,
      retryAt: next.retryAt,
      detail: lastError,
    },
  );
}
