import type { ZooKeeperLockClient } from './zookeeper-client.type';

// Everything the ZooKeeper strategy uses of the `zookeeper` package that is not its public API: the
// client's native binding (`client.native`), called directly for the lock protocol's calls. Proven against
// the version this repository pins (test/integration/zookeeper.int.spec.ts and the contract suite). The
// strategy's `fastPaths: false` option turns it off: every call then goes through the package's promise API.

type Callback = (rc: number, error: string, ...result: unknown[]) => void;

/** The `zookeeper` package's native binding, the part the lock protocol calls (same callbacks as its `a_*` methods). */
interface ZooKeeperNative {
  a_create(path: string, data: string, flags: number, callback: Callback): number;
  a_exists(path: string, watch: boolean, callback: Callback): number;
  aw_exists(path: string, watcher: (...event: unknown[]) => void, callback: Callback): number;
  a_get_children(path: string, watch: boolean, callback: Callback): number;
  a_get_children2(path: string, watch: boolean, callback: Callback): number;
  a_delete_(path: string, version: number, callback: Callback): number;
}

/**
 * One call to the native binding as a promise, rejecting the way the package's promise API does
 * ("<code> <text>", which `zkErrorCode` reads). A plain `Error` on purpose: it stands for the client's
 * own answer, so a call fails alike on either path, and the lock service wraps it as the `cause` of
 * `LockBackendUnavailableError`, as it wraps any driver error.
 */
function call<T>(send: (callback: Callback) => number, pick: (result: unknown[]) => T): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const sent = send((rc, error, ...result) => (rc === 0 ? resolve(pick(result)) : reject(new Error(`${rc} ${error}`))));
    if (sent < 0) reject(new Error(`${sent} the request could not be sent`));
  });
}

const first = (result: unknown[]): unknown => result[0];

/**
 * The client with the lock protocol's calls sent straight to its native binding. The package's methods
 * build a log line for every call before they know whether anyone logs (`util.inspect` of the arguments,
 * callbacks included): CPU spent on every call for a log nobody reads, and an acquisition makes up to
 * four calls. Same arguments, same answers, same errors; the rest of the client (connect, events, close,
 * auth, ACLs) is the package's own. A client without the binding (a different build) is used as it is.
 */
export function withNativeCalls(client: ZooKeeperLockClient): ZooKeeperLockClient {
  const native = (client as unknown as { native?: Partial<ZooKeeperNative> }).native;
  if (!native || typeof native.a_create !== 'function' || typeof native.aw_exists !== 'function' || typeof native.a_get_children2 !== 'function') return client;
  const binding = native as ZooKeeperNative;
  const calls: Pick<ZooKeeperLockClient, 'create' | 'exists' | 'w_exists' | 'get_children' | 'get_children2' | 'delete_'> = {
    create: ((path: string, data: string, flags: number) => call((cb) => binding.a_create(path, data, flags, cb), first)) as ZooKeeperLockClient['create'],
    exists: ((path: string, watch: boolean) => call((cb) => binding.a_exists(path, watch, cb), first)) as ZooKeeperLockClient['exists'],
    w_exists: ((path: string, watcher: (...event: unknown[]) => void) => call((cb) => binding.aw_exists(path, watcher, cb), first)) as ZooKeeperLockClient['w_exists'],
    get_children: ((path: string, watch: boolean) => call((cb) => binding.a_get_children(path, watch, cb), first)) as ZooKeeperLockClient['get_children'],
    get_children2: ((path: string, watch: boolean) => call((cb) => binding.a_get_children2(path, watch, cb), (result) => result)) as ZooKeeperLockClient['get_children2'],
    delete_: ((path: string, version: number) => call((cb) => binding.a_delete_(path, version, cb), () => undefined)) as ZooKeeperLockClient['delete_'],
  };
  // The session's own handling (events, close, auth) stays on the package's object, bound to it.
  const own: Omit<ZooKeeperLockClient, keyof typeof calls> = {
    close: client.close.bind(client),
    init: client.init.bind(client),
    on: client.on.bind(client),
    once: client.once.bind(client),
    removeListener: client.removeListener.bind(client),
    add_auth: client.add_auth.bind(client),
    set_acl: client.set_acl.bind(client),
    // The semaphore's only (not on the hot path of a lock): the package's own calls, looked up when made.
    w_get_children: (path, watcher) => client.w_get_children(path, watcher),
    get: (path, watch) => client.get(path, watch),
  };
  return { ...own, ...calls };
}
