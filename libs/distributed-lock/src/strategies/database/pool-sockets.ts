import type { LockDataSource } from './database-client.type';
import { isMysql, isPostgres } from './database-driver';

// The sockets under a data source's pools, which the drivers' graceful ends leave open until the server
// answers: a close past its bound (a frozen server) destroys them, so that the process can end. Reads
// mysql2's and pg-pool's state that is not their public API, as typeorm-internals.ts does, and does
// nothing where the shape it expects is not there.

/** A mysql2 connection (its `stream`, the timer of a handshake under way) or a pg client (`connection.stream`). */
interface Droppable {
  stream?: Socketish;
  connectTimeout?: ReturnType<typeof setTimeout> | null;
  connection?: { stream?: Socketish };
}

interface Socketish {
  destroyed?: boolean;
  readyState?: string;
  destroy?: () => void;
  once?: (event: 'close', listener: () => void) => unknown;
}

/**
 * Connections taken out of a data source's pool (see `leavePool`, `discardConnection`) whose socket may be
 * open still: a graceful end waits for the server's answer. Kept by data source until the socket closes, so
 * that a close past its bound drops them too (see `dropLeftPoolSockets`).
 */
const leftPool = new WeakMap<object, Set<Droppable>>();

function socketOf(connection: Droppable): Socketish | undefined {
  return connection.stream ?? connection.connection?.stream;
}

/** Whether the socket is gone, or was never opened (a pg client that never connected). */
function socketClosed(socket: Socketish | undefined): boolean {
  return !socket || socket.destroyed === true || socket.readyState === 'closed' || typeof socket.once !== 'function';
}

/** Records a driver connection taken out of the data source's pool as out of it until its socket closes. */
export function trackLeftPool(dataSource: object | undefined, driverConnection: unknown): void {
  const connection = driverConnection as Droppable | undefined;
  const socket = connection && socketOf(connection);
  if (!dataSource || !connection || socketClosed(socket)) return;
  let connections = leftPool.get(dataSource);
  if (!connections) leftPool.set(dataSource, (connections = new Set()));
  const tracked = connections;
  tracked.add(connection);
  socket?.once?.('close', () => tracked.delete(connection));
}

/**
 * Destroys each connection's socket at once, without the goodbye that a graceful end sends and then waits
 * for the server to answer; and clears the timer of a mysql2 handshake under way, which would keep the
 * process alive until it fires.
 */
export function dropConnections(connections: readonly unknown[]): void {
  for (const connection of connections as Droppable[]) {
    if (connection.connectTimeout) {
      clearTimeout(connection.connectTimeout);
      connection.connectTimeout = null;
    }
    try {
      socketOf(connection)?.destroy?.();
    } catch {
      // Already closed.
    }
  }
}

/** Resolves once the socket of every connection is closed (the server answered the goodbye). */
export function connectionsClosed(connections: readonly unknown[]): Promise<void> {
  const open = (connections as Droppable[]).map(socketOf).filter((socket) => !socketClosed(socket));
  return Promise.all(open.map((socket) => new Promise<void>((resolve) => socket?.once?.('close', () => resolve())))).then(() => undefined);
}

/**
 * Destroys the sockets of the connections this library took out of the data source's pool and that are
 * not closed yet (a graceful end still waiting for the server's answer). For a close past its bound, on a
 * data source of the application's too: those connections are no longer the pool's.
 */
export function dropLeftPoolSockets(dataSource: LockDataSource): void {
  const connections = leftPool.get(dataSource);
  if (!connections) return;
  leftPool.delete(dataSource);
  dropConnections([...connections]);
}

/**
 * Every connection of the data source's pools, open or opening, in use or idle: mysql2's pool, or each
 * pool of its replication cluster (`_allConnections`), and pg-pool's master and replicas (`_clients`); none
 * for another driver (SQLite has no sockets).
 */
export function poolConnections(dataSource: LockDataSource): unknown[] {
  const driver = (dataSource as { driver?: { pool?: unknown; poolCluster?: unknown; master?: unknown; slaves?: unknown[] } }).driver;
  if (isMysql(dataSource.options)) {
    const nodes = (driver?.poolCluster as { _nodes?: Record<string, { pool?: unknown }> } | undefined)?._nodes ?? {};
    const pools = [driver?.pool, ...Object.values(nodes).map((node) => node.pool)];
    return pools.flatMap((pool) => (pool as { _allConnections?: { toArray?: () => unknown[] } } | undefined)?._allConnections?.toArray?.() ?? []);
  }
  if (isPostgres(dataSource.options)) {
    return [driver?.master, ...(driver?.slaves ?? [])].flatMap((pool) => (pool as { _clients?: unknown[] } | undefined)?._clients ?? []);
  }
  return [];
}

/**
 * Before ending a data source: ending mysql2's replication cluster fails every request still waiting for a
 * connection (a frozen server leaves some). The cluster retries each failed request on another member at
 * once (`canRetry`), and ends the pool of a member that failed `removeNodeErrorCount` times (5 by default)
 * with an end() whose default callback throws: the retries spin the process (seen: 100 % CPU, for good),
 * or the throw ends it with an uncaught error. A cluster being ended does neither: its requests fail once.
 */
export function quietCluster(dataSource: LockDataSource): void {
  const cluster = (dataSource as { driver?: { poolCluster?: { _removeNodeErrorCount?: unknown; _canRetry?: unknown } } }).driver?.poolCluster;
  if (!cluster) return;
  if (typeof cluster._canRetry === 'boolean') cluster._canRetry = false;
  if (typeof cluster._removeNodeErrorCount === 'number') cluster._removeNodeErrorCount = Number.POSITIVE_INFINITY;
}

/**
 * Destroys every socket of the data source's pools at once (see `poolConnections`, `dropConnections`), and
 * of the connections that left them (see `dropLeftPoolSockets`). For a close past its bound; the drivers
 * then see each connection closed.
 */
export function destroyPoolSockets(dataSource: LockDataSource): void {
  quietCluster(dataSource);
  dropConnections(poolConnections(dataSource));
  dropLeftPoolSockets(dataSource);
}
