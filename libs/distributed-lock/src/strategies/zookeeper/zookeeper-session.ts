import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { loadPeerDependency } from '../load-peer-dependency';
import type { ZooKeeperLockClient } from './zookeeper-client.type';
import { withNativeCalls } from './zookeeper-native-calls';

/** How to open a ZooKeeper session. */
export interface ZooKeeperConnectionOptions {
  /** Connect string: "host:port,host:port[/chroot]". */
  readonly connect: string;
  /** Session timeout in ms (the server clamps it to 2–20 ticks). Default 10 000. */
  readonly sessionTimeout?: number;
  /** Digest authentication, "user:password". */
  readonly digestAuth?: string;
}

/**
 * One ZooKeeper session, kept apart from the lock protocol (as etcd's concurrency.Session is). A lost
 * connection is "unknown": the session (and its ephemeral nodes) may still live, and the client
 * reconnects by itself. An expired session is final: every lock held on it is lost (listeners are told),
 * and the next operation opens a new session.
 */
export class ZooKeeperSession {
  private current: Promise<ZooKeeperLockClient> | undefined;
  private readonly expiryListeners = new Set<() => void>();
  private closing = false;
  /** Gives up the connection being made, if any. */
  private abandonConnect: (() => void) | undefined;

  constructor(
    private readonly options: ZooKeeperConnectionOptions,
    private readonly strategy: string,
    private readonly connectTimeoutMs: number,
  ) {}

  /** The connected client, opening a session if there is none. Never opens one once closed. */
  client(): Promise<ZooKeeperLockClient> {
    // A late caller (an orphan sweep, a lock attempt that was in flight) must not open a session nobody
    // would close: its native client would keep reconnecting, and the process alive, forever.
    if (this.closing) return Promise.reject(new Error(`the ZooKeeper lock strategy "${this.strategy}" is closed`));
    this.current ??= this.open().catch((error: unknown) => {
      this.current = undefined;
      throw error;
    });
    return this.current;
  }

  /** Called once when the session that is open now expires or closes unexpectedly. */
  onExpired(listener: () => void): () => void {
    this.expiryListeners.add(listener);
    return () => this.expiryListeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closing = true;
    // A connection still being made is given up now, not when its connect timeout ends: until then its
    // native client keeps retrying (against a server that may never come) and keeps the process alive.
    this.abandonConnect?.();
    const current = this.current;
    this.current = undefined;
    if (current) (await current.catch(() => undefined))?.close();
  }

  private async open(): Promise<ZooKeeperLockClient> {
    const ZooKeeper = loadPeerDependency<typeof import('zookeeper')>('zookeeper', this.strategy);
    const client = new ZooKeeper({
      connect: this.options.connect,
      timeout: this.options.sessionTimeout ?? 10_000,
      debug_level: ZooKeeper.constants.ZOO_LOG_LEVEL_ERROR,
      host_order_deterministic: false,
    }) as unknown as ZooKeeperLockClient;
    const started = Date.now();
    await new Promise<void>((resolve, reject) => {
      const giveUp = (): void => {
        clearTimeout(timer);
        this.abandonConnect = undefined;
        client.close();
        reject(new LockBackendUnavailableError(this.strategy, `connect to ZooKeeper (${this.options.connect})`, Date.now() - started));
      };
      const timer = setTimeout(giveUp, this.connectTimeoutMs);
      this.abandonConnect = giveUp;
      client.once('connect', () => {
        clearTimeout(timer);
        this.abandonConnect = undefined;
        resolve();
      });
      client.init({});
    });
    client.on('close', () => {
      if (this.closing) return;
      // The session ended (expired, or closed by the server): its ephemeral nodes are gone.
      this.current = undefined;
      const listeners = [...this.expiryListeners];
      this.expiryListeners.clear();
      for (const listener of listeners) listener();
    });
    if (this.options.digestAuth) {
      await new Promise<void>((resolve, reject) =>
        (client as unknown as { add_auth(scheme: string, auth: string, cb: (rc: number, error: string) => void): void }).add_auth('digest', this.options.digestAuth as string, (rc, error) =>
          rc === 0 ? resolve() : reject(new LockBackendUnavailableError(this.strategy, `authenticate to ZooKeeper (${error})`, Date.now() - started)),
        ),
      );
    }
    return withNativeCalls(client);
  }
}
