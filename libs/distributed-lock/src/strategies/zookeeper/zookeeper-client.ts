import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { Socket } from 'node:net';
import { ZK_ERRORS, zkErrorCode, type ZooKeeperAclEntry, type ZooKeeperSessionClient, type ZooKeeperStat, type ZooKeeperWatcher } from './zookeeper-client.type';
import { NZK_STATES, type ConnectionInternals, type NzkClient, type NzkException, type NzkModule, type NzkStat, type NzkWatcher } from './node-zookeeper-client.type';

/** What a session is opened with. */
export interface ZooKeeperClientConfig {
  readonly connect: string;
  /** Requested session timeout in ms. */
  readonly timeout: number;
}

/** How often the socket's silence is checked. */
const WATCH_EVERY_MS = 100;
/** How long a session being closed waits for the server's answer before its socket is dropped. */
const CLOSE_BOUND_MS = 1_000;
/** The pause before the servers are tried again, once each has been tried (the package picks 0 to this). */
const SPIN_DELAY_MS = 250;
/**
 * The most one server gets to connect and answer the handshake before the next is tried. The package gives
 * it the session timeout divided by the number of servers: with few servers, a member that accepts and does
 * not answer (one electing a leader) would hold a session's opening past the lock's operation timeout.
 */
const HANDSHAKE_BOUND_MS = 2_000;

/**
 * A ZooKeeper session over `node-zookeeper-client`, a client on Node's own sockets, in the shape the
 * session and the lock protocol use. It adds what that package leaves out, as ZooKeeper's own clients do:
 *
 * - **A read timeout.** A server that stops answering (frozen, or a member that accepts and never answers
 *   while it elects a leader) would hold the package's socket forever. Silent for two thirds of the session
 *   timeout while connected (the server is pinged every third), or for the package's connect bound during the
 *   handshake, the socket is dropped and the next server tried, as the Java and C clients do.
 * - **Calls that end with their session.** The package leaves a call queued while it reconnects; if the
 *   session turns out expired, or is closed here, such a call would never be answered. Every call still
 *   waiting then fails with SESSION_EXPIRED or CLOSING, the codes the session reads as "ended".
 * - **A watch that leaves nothing behind.** `w_exists` reads the node's data with a watch (as Curator's lock
 *   does): a node already gone gives NO_NODE and no watch, where an exists watch would stay for a create that
 *   never comes, on this client and on the server, for the life of the session. The package keeps every
 *   watcher it is given until its node changes, with no way to remove one: the watches of one node share one
 *   watcher of the package here, and a wait that ends without its event takes its own back (`unwatch`).
 * - **A reply cut off is dropped with its connection.** The package keeps the bytes of a reply not read whole
 *   yet across a reconnect, glues them in front of the next server's answer, and throws (out of its socket's
 *   data handler: the process would crash) on a reply it cannot parse. Both handlers are wrapped: a socket
 *   that closes leaves no bytes behind, and a reply that cannot be parsed drops its connection.
 *
 * The `zookeeper` package's native binding, used before, could leave another socket of the process unread
 * after a connection attempt timed out (docs/strategies/zookeeper.md): a client on Node's sockets cannot.
 */
export class ZooKeeperClient extends EventEmitter implements ZooKeeperSessionClient {
  private readonly client: NzkClient;
  /** Rejections of the calls still waiting for their answer. */
  private readonly waiting = new Set<(error: Error) => void>();
  /** Why calls fail from now on: the session expired, or was closed here. */
  private ended: 'expired' | 'closed' | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private watchedSocket: Socket | undefined;
  private heardAt = 0;
  /** The watches set, by kind and path: one watcher of the package each, and the callers it tells. */
  private readonly watches = new Map<string, Watch>();

  constructor(
    private readonly zk: NzkModule,
    config: ZooKeeperClientConfig,
  ) {
    super();
    // retries 0: a call that loses its connection fails, and the lock protocol decides what that means.
    this.client = zk.createClient(config.connect, { sessionTimeout: config.timeout, spinDelay: SPIN_DELAY_MS, retries: 0 });
    const internals = this.client.connectionManager;
    const { onSocketData, onSocketClosed, connect, findNextServer } = internals;
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const adapter = this;
    // Bound to each socket as it is made (ConnectionManager.connect): wrapped before the first. Nothing of
    // ours runs inside them (our events and watchers are told on a later microtask), so what they throw is
    // the package's.
    internals.onSocketData = function (this: ConnectionInternals, buffer: Buffer): void {
      try {
        onSocketData.call(this, buffer);
      } catch {
        // A reply that cannot be parsed (or an error code the package does not know): the connection is
        // dropped, and the next server tried. The call it answered was taken off the package's queue
        // already, and every call sent on the connection would fail with it: they fail now.
        this.pendingBuffer = null;
        adapter.failWaiting(new Error(`${ZK_ERRORS.CONNECTION_LOSS} CONNECTION_LOSS`));
        this.socket?.destroy();
      }
    };
    internals.onSocketClosed = function (this: ConnectionInternals, hadError: boolean): void {
      this.pendingBuffer = null;
      onSocketClosed.call(this, hadError);
    };
    // Closed here: no reconnect, also one the package scheduled before (it opens the next socket on a later
    // tick without looking at its state).
    internals.connect = function (this: ConnectionInternals): void {
      if (!adapter.ended) connect.call(this);
    };
    internals.findNextServer = function (this: ConnectionInternals, use: (server: unknown) => void): void {
      findNextServer.call(this, (server: unknown) => {
        if (!adapter.ended) use(server);
      });
    };
  }

  get timeout(): number {
    return this.client.getSessionTimeout();
  }

  init(): void {
    // Told on a microtask, out of the package's socket handlers: a listener that throws does so on its own,
    // and is never taken for a reply that cannot be parsed.
    this.client.on('connected', () => queueMicrotask(() => this.emit('connect')));
    this.client.on('disconnected', () => {
      if (!this.ended) queueMicrotask(() => this.emit('connecting'));
    });
    this.client.on('expired', () => this.end('expired'));
    this.client.on('authenticationFailed', () => this.end('expired'));
    this.watchdog = setInterval(() => this.watchSocket(), WATCH_EVERY_MS);
    this.watchdog.unref();
    this.client.connect();
  }

  close(): void {
    if (this.ended === 'closed') return;
    const internals = this.client.connectionManager;
    if (!this.ended && internals.state === NZK_STATES.CONNECTED) {
      // Connected: the server is asked to end the session (its ephemeral nodes go at once).
      this.client.close();
      this.heardAt = performance.now();
    } else if (internals.state !== NZK_STATES.CLOSED) {
      // Not connected: nothing to tell a server; the package stops reconnecting once its socket closes. A
      // session the server still has expires there.
      internals.setState(NZK_STATES.CLOSING);
      // The package's bound on a TCP connect under way would keep the process alive until it fires.
      if (internals.connectTimeoutHandler) clearTimeout(internals.connectTimeoutHandler);
      internals.socket?.destroy();
    }
    this.end('closed');
  }

  add_auth(scheme: string, auth: string, callback: (rc: number, error: string) => void): void {
    // The package sends the credentials without telling how they were taken: a call sent behind them on the
    // same connection is answered after them, and fails if the server refused them (it then drops the
    // connection). A digest is never refused: a wrong password is another identity, refused by the ACLs.
    this.client.addAuthInfo(scheme, Buffer.from(auth));
    this.exists('/').then(
      () => callback(0, ''),
      (error: Error) => {
        const code = zkErrorCode(error) ?? ZK_ERRORS.CONNECTION_LOSS;
        callback(code === ZK_ERRORS.NO_NODE ? 0 : code, error.message);
      },
    );
  }

  create(path: string, data: string, flags: number): Promise<string> {
    return this.call<[string], string>((cb) => this.client.create(path, Buffer.from(data), this.zk.ACL.OPEN_ACL_UNSAFE, flags, cb), (created) => created);
  }

  exists(path: string, _watch?: false): Promise<ZooKeeperStat> {
    return this.call<[NzkStat | null], ZooKeeperStat>(
      (cb) => this.client.exists(path, undefined, cb),
      (stat) => {
        if (!stat) throw new Error(`${ZK_ERRORS.NO_NODE} NO_NODE`);
        return statOf(stat);
      },
    );
  }

  w_exists(path: string, watcher: ZooKeeperWatcher): Promise<ZooKeeperStat> {
    return this.watched(`data ${path}`, watcher, (dispatch) =>
      this.call<[Buffer | null, NzkStat], ZooKeeperStat>(
        (cb) => this.client.getData(path, dispatch, cb),
        (_data, stat) => statOf(stat),
      ),
    );
  }

  get_children(path: string, _watch?: false): Promise<string[]> {
    return this.call<[string[], NzkStat], string[]>((cb) => this.client.getChildren(path, undefined, cb), (children) => children);
  }

  w_get_children(path: string, watcher: ZooKeeperWatcher): Promise<string[]> {
    return this.watched(`child ${path}`, watcher, (dispatch) =>
      this.call<[string[], NzkStat], string[]>(
        (cb) => this.client.getChildren(path, dispatch, cb),
        (children) => children,
      ),
    );
  }

  unwatch(path: string, watcher: ZooKeeperWatcher): void {
    this.watches.get(`data ${path}`)?.callers.delete(watcher);
    this.watches.get(`child ${path}`)?.callers.delete(watcher);
  }

  get_children2(path: string, _watch?: false): Promise<[string[], ZooKeeperStat]> {
    return this.call<[string[], NzkStat], [string[], ZooKeeperStat]>((cb) => this.client.getChildren(path, undefined, cb), (children, stat) => [children, statOf(stat)]);
  }

  get(path: string, _watch?: false): Promise<[ZooKeeperStat, Buffer]> {
    return this.call<[Buffer | null, NzkStat], [ZooKeeperStat, Buffer]>((cb) => this.client.getData(path, undefined, cb), (data, stat) => [statOf(stat), data ?? Buffer.alloc(0)]);
  }

  set(path: string, data: string, version: number): Promise<ZooKeeperStat> {
    return this.call<[NzkStat], ZooKeeperStat>((cb) => this.client.setData(path, Buffer.from(data), version, cb), (stat) => statOf(stat));
  }

  delete_(path: string, version: number): Promise<void> {
    return this.call<[], void>((cb) => this.client.remove(path, version, cb), () => undefined);
  }

  /**
   * The package has no `sync`: a multi that checks `path`'s version (any version) stands in for it. It is a
   * write to ZooKeeper, ordered through the leader, so its server answers only once it has applied every
   * write committed before it; yet it changes nothing and needs only the READ permission. A missing node
   * fails the check, which is ordered all the same.
   */
  sync(path: string): Promise<void> {
    return this.call<[unknown], void>(
      (cb) => this.client.transaction().check(path, -1).commit(cb),
      () => undefined,
    ).catch((error: unknown) => {
      if (zkErrorCode(error) !== ZK_ERRORS.NO_NODE) throw error;
    });
  }

  set_acl(path: string, version: number, acl: readonly ZooKeeperAclEntry[]): Promise<void> {
    const entries = acl.map((entry) => new this.zk.ACL(entry.perms, new this.zk.Id(entry.scheme, entry.auth)));
    return this.call<[NzkStat], void>((cb) => this.client.setACL(path, entries, version, cb), () => undefined);
  }

  /**
   * A call that sets a watch: `watcher` joins the callers of the watch of `key` (kind and path), whose one
   * watcher of the package (`dispatch`) tells them all once and is gone. A call that fails leaves nothing.
   */
  private watched<T>(key: string, watcher: ZooKeeperWatcher, send: (dispatch: NzkWatcher) => Promise<T>): Promise<T> {
    let watch = this.watches.get(key);
    if (!watch) {
      const made: Watch = {
        callers: new Set(),
        set: false,
        dispatch: (event) => {
          if (this.watches.get(key) === made) this.watches.delete(key);
          const callers = [...made.callers];
          made.callers.clear();
          const type = event.getType();
          // Out of the package's socket handler (see init), each on its own: one that throws stops no other.
          for (const caller of callers) queueMicrotask(() => caller(type));
        },
      };
      watch = made;
      this.watches.set(key, watch);
    }
    const current = watch;
    current.callers.add(watcher);
    return send(current.dispatch).then(
      (result) => {
        current.set = true;
        return result;
      },
      (error: unknown) => {
        current.callers.delete(watcher);
        if (!current.set && current.callers.size === 0 && this.watches.get(key) === current) this.watches.delete(key);
        throw error;
      },
    );
  }

  /** One call: its answer picked, its error as "<code> <name>", and failed at once if the session ended. */
  private call<R extends unknown[], T>(send: (callback: (error: NzkException | null, ...result: R) => void) => void, pick: (...result: R) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.ended) return reject(this.endedError());
      this.waiting.add(reject);
      try {
        send((error, ...result) => {
          if (!this.waiting.delete(reject)) return; // failed already (its session ended, or its connection)
          if (error) return reject(this.errorOf(error));
          try {
            resolve(pick(...result));
          } catch (picked) {
            reject(picked);
          }
        });
      } catch (refused) {
        // Refused by the package before it was sent (its own checks of the arguments).
        this.waiting.delete(reject);
        reject(refused);
      }
    });
  }

  private errorOf(error: NzkException): Error {
    // Once the session ended, the package answers calls with CONNECTION_LOSS: the session's code instead.
    if (this.ended && error.getCode() === ZK_ERRORS.CONNECTION_LOSS) return this.endedError();
    return new Error(`${error.getCode()} ${error.getName()}`);
  }

  private endedError(): Error {
    return this.ended === 'expired' ? new Error(`${ZK_ERRORS.SESSION_EXPIRED} SESSION_EXPIRED`) : new Error(`${ZK_ERRORS.CLOSING} zookeeper is closing`);
  }

  /** The session ended: every call still waiting fails, and listeners hear `close` once (see init). */
  private end(how: 'expired' | 'closed'): void {
    if (this.ended) return;
    this.ended = how;
    this.failWaiting(this.endedError());
    queueMicrotask(() => this.emit('close'));
  }

  /** @internal Fails every call still waiting for its answer with `error`. */
  failWaiting(error: Error): void {
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const reject of waiting) reject(error);
  }

  /** Drops a socket that has been silent for too long, so that the package moves on to the next server. */
  private watchSocket(): void {
    const internals = this.client.connectionManager;
    if (internals.state === NZK_STATES.CLOSED) {
      clearInterval(this.watchdog);
      return;
    }
    const socket = internals.socket;
    if (!socket || socket.destroyed) return;
    const now = performance.now();
    if (socket !== this.watchedSocket) {
      this.watchedSocket = socket;
      this.heardAt = now;
      socket.on('data', () => (this.heardAt = performance.now()));
      return;
    }
    const bound =
      internals.state === NZK_STATES.CONNECTED ? (this.timeout * 2) / 3 : internals.state === NZK_STATES.CLOSING ? CLOSE_BOUND_MS : Math.min(internals.connectTimeout, HANDSHAKE_BOUND_MS);
    if (now - this.heardAt > bound) socket.destroy();
  }
}

/** A watch set on the server: the callers it tells when it fires, and the package's watcher for it. */
interface Watch {
  readonly callers: Set<ZooKeeperWatcher>;
  readonly dispatch: NzkWatcher;
  /** A call set it on the server (and the package holds `dispatch` until it fires). */
  set: boolean;
}

function statOf(stat: NzkStat): ZooKeeperStat {
  return { czxid: Number(stat.czxid.readBigInt64BE(0)), pzxid: Number(stat.pzxid.readBigInt64BE(0)), cversion: stat.cversion, version: stat.version };
}
