import type ZooKeeper from 'zookeeper';

/** What the ZooKeeper strategy uses of a `zookeeper` (npm) client. */
export type ZooKeeperLockClient = Pick<ZooKeeper, 'create' | 'exists' | 'w_exists' | 'get_children' | 'w_get_children' | 'get_children2' | 'get' | 'delete_' | 'close' | 'init' | 'on' | 'once' | 'removeListener' | 'add_auth' | 'set_acl'>;

/**
 * The native client as the session holds it: the calls and events above, and `timeout`, the session timeout
 * in ms (the requested one until connected, then the one the server granted: zoo_recv_timeout).
 */
export type ZooKeeperSessionClient = ZooKeeperLockClient & Pick<ZooKeeper, 'timeout'>;

/** ZooKeeper's error codes that the recipe reacts to (the client rejects with "<code> <text>"). */
export const ZK_ERRORS = Object.freeze({
  NO_NODE: -101,
  NODE_EXISTS: -110,
  NOT_EMPTY: -111,
  BAD_VERSION: -103,
  CONNECTION_LOSS: -4,
  SESSION_EXPIRED: -112,
  OPERATION_TIMEOUT: -7,
  NO_AUTH: -102,
  /** The handle is closing: closed here, or by the native client on learning of the session's expiry. */
  CLOSING: -116,
  /** The handle is closed (no session under it any more). */
  INVALID_STATE: -9,
});

/** Watch event type of a deleted node (ZOO_DELETED_EVENT). */
export const ZK_DELETED_EVENT = 2;

/** The ZooKeeper error code of a client rejection, if it is one. */
export function zkErrorCode(error: unknown): number | undefined {
  const match = /^(-\d+)\b/.exec(String((error as { message?: unknown })?.message ?? ''));
  return match ? Number(match[1]) : undefined;
}
