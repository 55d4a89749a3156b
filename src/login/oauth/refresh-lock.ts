// Single flight of an OAuth refresh across processes. Within one process the refresher's in-flight
// map already shares one refresh; replicas on one PostgreSQL also need a lock on the connection, and
// the second holder re-reads the stored (refreshed) row instead of refreshing again: refresh tokens
// are often single-use, so a second refresh with the old one would end the connection.

/** The per-connection refresh lock: `fn` runs while no other holder of the same connection's lock does. */
export interface RefreshLock {
  withLock<T>(connectionId: string, fn: () => Promise<T>): Promise<T>;
}

/** One process (SQLite): the refresher's in-flight map is the whole single flight, so no lock is needed. */
export const processRefreshLock: RefreshLock = {
  withLock: (_connectionId, fn) => fn(),
};
