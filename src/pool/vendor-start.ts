import { childStarted, childStopped, vendorTag } from "../events/vendor-events.js";
import { PoolError } from "./errors.js";
import type { VendorLauncher } from "./launcher.js";
import type { Entry } from "./pool-entries.js";
import type { PoolLease, VendorStartedListener } from "./pool-types.js";
import { type EntryStopDeps, stopWithinDeadline } from "./stop.js";

/** What starting a vendor touches: what a stop does, and the launcher and the started listeners. */
export interface EntryStartDeps extends EntryStopDeps {
  readonly launcher: VendorLauncher;
  /** Run on each started vendor before it takes calls; a PoolError from one (over the limits) stops it. */
  readonly startedListeners: readonly VendorStartedListener[];
  /** Counts a vendor launched (the pool's `spawned` figure). */
  onSpawned(): void;
}

/**
 * Starts the lease's vendor as a new entry holding that first lease: child.started once launched,
 * a crash watch that takes it out of the pool, the started listeners before any call. A start that
 * fails takes the entry out again; either way queued calls are woken.
 */
export function startEntry(d: EntryStartDeps, lease: PoolLease): Entry {
  const { connection, service } = lease;
  let entry!: Entry;
  const ready = (async () => {
    const handle = await d.launcher.launch(connection, service, lease.secrets());
    entry.handle = handle;
    d.onSpawned();
    d.events.emit(childStarted(entry.tag, d.clock.now()));
    handle.onClosed(() => {
      if (entry.dead) return;
      entry.dead = true;
      d.entries.delete(entry);
      d.log.warn("vendor went away", { connectionId: entry.connectionId, service: service.name });
      d.events.emit(childStopped(entry.tag, "crashed", d.clock.now()));
      d.wake();
    });
    try {
      await Promise.all(d.startedListeners.map((l) => l(handle.client, lease)));
    } catch (err) {
      if (!(err instanceof PoolError)) throw err;
      // Over the broker's limits (endless tools/list paging): this vendor gets no calls.
      if (!entry.dead) d.events.emit(childStopped(entry.tag, "limit", d.clock.now()));
      entry.dead = true;
      d.log.warn("vendor misbehaved; stopped", {
        connectionId: entry.connectionId,
        service: service.name,
        code: err.code,
      });
      await stopWithinDeadline(d, entry.connectionId, handle, "kill");
      throw err;
    }
    return handle;
  })();
  entry = {
    connectionId: connection.id,
    teamId: connection.teamId,
    tag: vendorTag(connection, service),
    secretVersion: lease.version,
    ready,
    handle: undefined,
    leases: 1,
    lastUsed: d.clock.now(),
    dead: false,
  };
  d.entries.set(entry);
  ready.then(
    () => d.wake(),
    () => {
      entry.dead = true;
      d.entries.delete(entry);
      d.wake();
    },
  );
  return entry;
}
