/** What the strategy reads of a node's stat: zxids as numbers (a zxid is epoch << 32 | counter, well below 2^53). */
export interface ZooKeeperStat {
  /** The zxid of the node's create: a lock node's fencing token. */
  readonly czxid: number;
  /** The zxid of the last change to the node's children. */
  readonly pzxid: number;
  /** How many times its children changed (creates and deletes). */
  readonly cversion: number;
  /** The node's data version, for a versioned delete. */
  readonly version: number;
}

/** A one-shot watch: called once with the event's type (ZooKeeper's numbering: 1 created … 4 children changed). */
export type ZooKeeperWatcher = (type: number) => void;

/** One entry of a node's ACL, as ZooKeeper states it. */
export interface ZooKeeperAclEntry {
  readonly perms: number;
  readonly scheme: string;
  readonly auth: string;
}

/**
 * The calls the lock protocol makes on a session. A call rejects with an `Error` whose message starts with
 * ZooKeeper's error code ("-101 NO_NODE"), which `zkErrorCode` reads.
 */
export interface ZooKeeperLockClient {
  /** Creates a node with the open ACL; resolves its path (with the sequence suffix of a sequential node). */
  create(path: string, data: string, flags: number): Promise<string>;
  /** The node's stat; rejects NO_NODE when there is none. */
  exists(path: string, watch: false): Promise<ZooKeeperStat>;
  /**
   * The node's stat, with a watch on it that fires once: deleted, or its data changed. Rejects NO_NODE when
   * there is none, and then leaves no watch behind (a watch on a missing node would wait for a create that
   * never comes: every lock and permit node has a name of its own).
   */
  w_exists(path: string, watcher: ZooKeeperWatcher): Promise<ZooKeeperStat>;
  get_children(path: string, watch: false): Promise<string[]>;
  /** The children, with a watch that fires once when they change or the node is deleted. */
  w_get_children(path: string, watcher: ZooKeeperWatcher): Promise<string[]>;
  /** A wait that ended without its watch's event: `watcher` (given to `w_exists` or `w_get_children`) is not called. */
  unwatch(path: string, watcher: ZooKeeperWatcher): void;
  /** The children and the parent's stat, in one call. */
  get_children2(path: string, watch: false): Promise<[string[], ZooKeeperStat]>;
  /** The node's stat and data. */
  get(path: string, watch: false): Promise<[ZooKeeperStat, Buffer]>;
  /** Replaces the node's data if its version matches (-1: any); resolves its new stat. Rejects NO_NODE when there is none. */
  set(path: string, data: string, version: number): Promise<ZooKeeperStat>;
  /** Deletes the node if its version matches (-1: any). */
  delete_(path: string, version: number): Promise<void>;
  set_acl(path: string, version: number, acl: readonly ZooKeeperAclEntry[]): Promise<void>;
  /**
   * Resolves once the server this session reads from has applied every write the ensemble committed before
   * the call, so that reads after it see them (ZooKeeper's `sync`). A read is served by the server a
   * session is connected to, which may lag the leader: a query of what another process just did needs this.
   */
  sync(path: string): Promise<void>;
}

/**
 * A client as the session holds it: the protocol's calls, its life (`init` connects, `close` ends the
 * session), the events `connect` (connected, again after a reconnect), `connecting` (the connection
 * dropped: the session may live on) and `close` (the session ended: expired, or closed here), `add_auth`, and
 * `timeout`: the session timeout in ms, the requested one until connected, then the one the server granted.
 */
export interface ZooKeeperSessionClient extends ZooKeeperLockClient {
  init(options: object): void;
  close(): void;
  readonly timeout: number;
  on(event: 'connect' | 'connecting' | 'close', listener: () => void): unknown;
  once(event: 'connect' | 'connecting' | 'close', listener: () => void): unknown;
  add_auth(scheme: string, auth: string, callback: (rc: number, error: string) => void): void;
}

/** ZooKeeper's error codes that the recipe reacts to (a call rejects with "<code> <text>"). */
export const ZK_ERRORS = Object.freeze({
  NO_NODE: -101,
  NODE_EXISTS: -110,
  NOT_EMPTY: -111,
  BAD_VERSION: -103,
  CONNECTION_LOSS: -4,
  SESSION_EXPIRED: -112,
  OPERATION_TIMEOUT: -7,
  NO_AUTH: -102,
  /** The handle is closing: closed here, or on learning of the session's expiry. */
  CLOSING: -116,
  /** The handle is closed (no session under it any more). */
  INVALID_STATE: -9,
});

/** Watch event type of a deleted node (ZOO_DELETED_EVENT). */
export const ZK_DELETED_EVENT = 2;

/** Watch event type of a node whose data changed (ZOO_CHANGED_EVENT). */
export const ZK_DATA_CHANGED_EVENT = 3;

/** The ZooKeeper error code of a client rejection, if it is one. */
export function zkErrorCode(error: unknown): number | undefined {
  const match = /^(-\d+)\b/.exec(String((error as { message?: unknown })?.message ?? ''));
  return match ? Number(match[1]) : undefined;
}
