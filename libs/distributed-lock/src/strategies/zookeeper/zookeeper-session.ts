import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import type { WaitBudget } from '../../locking/lock-lease';
import { budgetAborted, onBudgetAbort } from '../../locking/wait-for-wake';
import { loadPeerDependency } from '../load-peer-dependency';
import type { NzkModule } from './node-zookeeper-client.type';
import { ZK_ERRORS, zkErrorCode, type ZooKeeperLockClient, type ZooKeeperSessionClient } from './zookeeper-client.type';
import { ZooKeeperClient, type ZooKeeperClientConfig } from './zookeeper-client';
import { livenessNow, SessionLiveness } from './zookeeper-session-liveness';

/** How to open a ZooKeeper session. */
export interface ZooKeeperConnectionOptions {
  /** Connect string: "host:port,host:port[/chroot]". */
  readonly connect: string;
  /** Session timeout in ms (the server clamps it to 2–20 ticks). Default 10 000. */
  readonly sessionTimeout?: number;
  /**
   * Digest authentication, "user:password". With it, the base node and the lock nodes the strategy creates
   * get an ACL that gives every permission to this identity and none to anyone else: no other client (an
   * unauthenticated one, or another identity) can delete a held lock's node, add a contender, or change
   * the ACL; every process of the application uses the same identity. A refusal (wrong password, or an ACL
   * without it) is a `LockPermissionDeniedError`. Without it, the nodes keep ZooKeeper's open ACL
   * (world:anyone:cdrwa): any client of the ensemble can delete them. Default: none.
   */
  readonly digestAuth?: string;
}

/** How a session ended, as its listeners are told. */
export type ZooKeeperSessionEnd =
  /**
   * The server expired (or closed) it: its ephemeral nodes are gone. The client learns this only
   * once it reaches the ensemble again.
   */
  | 'expired'
  /**
   * Given up here: the server may have expired it by now (see SessionLiveness): cut off from the ensemble
   * while locks were held, for as long as the server may take to expire it, or not heard from for as long
   * (the process was frozen). It may still live on the server, and its ephemeral nodes with it, until it
   * expires there; its handle is closed, so it never comes back.
   */
  | 'given-up';

/** Hooks of a session: the strategy's view of it, and (for tests) where clients come from. */
export interface ZooKeeperSessionHooks {
  /**
   * Whether locks are held on the session now: a session cut off from the ensemble is given up only then.
   * Default: whether anyone listens for its end.
   */
  readonly holdsLocks?: () => boolean;
  /** Makes a client. Default: one over the `node-zookeeper-client` package (an optional peer dependency). */
  readonly createClient?: (config: ZooKeeperClientConfig) => ZooKeeperSessionClient;
}

/** Default requested session timeout, in ms. */
const DEFAULT_SESSION_TIMEOUT_MS = 10_000;

/**
 * One ZooKeeper session, kept apart from the lock protocol (as etcd's concurrency.Session is). A lost
 * connection is "unknown" at first: the session (and its ephemeral nodes) may still live, and the client
 * reconnects by itself. An expired session is final: every lock held on it is lost (listeners are told),
 * and the next operation opens a new session.
 *
 * The client reports an expiry only once it reaches the ensemble again, which may be long after
 * the server expired the session and let another holder in. So, like Curator's connection state manager
 * ("SUSPENDED, then LOST once the session timeout has passed"), a session that stays disconnected while
 * locks are held is given up before the server could have expired it: its listeners are told, its
 * handle is closed, and the next operation opens a new session (see SessionLiveness).
 *
 * A process frozen past its session (SIGSTOP, a stalled VM) wakes with timers that fire late and a
 * client that has not yet heard of the expiry. So the session is also checked on the monotonic clock when
 * it is used: `client()` never hands out a session the server may have expired (it is given up, and the
 * caller waits for a new one), and `isAlive()` tells a holder, at its first read after waking, that its
 * session and every lock on it are gone.
 */
export class ZooKeeperSession {
  private current: Promise<ZooKeeperSessionClient> | undefined;
  /** The open session, once connected. */
  private live: LiveSession | undefined;
  private readonly expiryListeners = new Set<(end: ZooKeeperSessionEnd) => void>();
  /** How each session that ended, ended. */
  private readonly ended = new WeakMap<ZooKeeperLockClient, ZooKeeperSessionEnd>();
  private closing = false;
  /** Gives up the connection being made, if any. */
  private abandonConnect: (() => void) | undefined;

  constructor(
    private readonly options: ZooKeeperConnectionOptions,
    private readonly strategy: string,
    private readonly connectTimeoutMs: number,
    private readonly hooks: ZooKeeperSessionHooks = {},
  ) {
    // A missing client package is reported at construction, as every other strategy does, not at the
    // first lock (the module is loaded once; Node caches it).
    if (!hooks.createClient) loadPeerDependency<NzkModule>('node-zookeeper-client', strategy);
  }

  /** The connected client, opening a session if there is none. Never opens one once closed. */
  client(): Promise<ZooKeeperLockClient> {
    // A late caller (an orphan sweep, a lock attempt that was in flight) must not open a session nobody
    // would close: its client would keep reconnecting, and the process alive, forever.
    if (this.closing) return Promise.reject(new LockBackendUnavailableError(this.strategy, 'open a session (the strategy is closed)', 0));
    // A session the server may have expired (the process was frozen past it) is not handed out: a call on
    // it would fail as the client learns of the expiry. It is given up, and the caller gets a new one.
    if (this.live?.liveness.presumedExpired()) this.giveUp(this.live, true);
    this.current ??= this.open().catch((error: unknown) => {
      this.current = undefined;
      throw error;
    });
    return this.current;
  }

  /**
   * The connected client as `client()` gives it, or null once the caller gave up (`budget` aborted, which
   * close() of the lock service does too): a wait never outlives its caller on a session that is slow to
   * open. Rejects as `client()` does (a connect that failed or was abandoned).
   */
  clientWithin(budget: WaitBudget | undefined): Promise<ZooKeeperLockClient | null> {
    const opening = this.client();
    if (!budget) return opening;
    if (budgetAborted(budget)) {
      opening.catch(() => undefined);
      return Promise.resolve(null);
    }
    return new Promise((resolve, reject) => {
      const stop = onBudgetAbort(budget, () => resolve(null));
      opening.then(
        (client) => {
          stop();
          resolve(client);
        },
        (error: unknown) => {
          stop();
          reject(error);
        },
      );
    });
  }

  /**
   * Called once when the session ends: expired or closed by the server, or given up here. With `client`,
   * the session of that client: if it has ended already, the listener is called at once (asynchronously).
   * Without it, the session open now, or the next one.
   */
  onExpired(listener: (end: ZooKeeperSessionEnd) => void, client?: ZooKeeperLockClient): () => void {
    const end = client && this.ended.get(client);
    if (end) {
      let cancelled = false;
      queueMicrotask(() => {
        if (!cancelled) listener(end);
      });
      return () => {
        cancelled = true;
      };
    }
    this.expiryListeners.add(listener);
    return () => this.expiryListeners.delete(listener);
  }

  /**
   * Whether the session of `client` may still live on the server: false once it ended, and false once the
   * server may have expired it (a process that wakes from a freeze), which ends it here and now: its
   * listeners are told before this returns. Costs no call to the server.
   */
  isAlive(client: ZooKeeperLockClient): boolean {
    if (this.ended.has(client)) return false;
    const live = this.live;
    if (live?.client !== client || !live.liveness.presumedExpired()) return true;
    this.giveUp(live, true);
    return false;
  }

  /**
   * Whether `error`, from a call on `client`, says that its session is gone: expired on the server, or
   * its handle closing or closed (the client learned of the expiry). The session then ends here
   * now, if it has not already, and the next call opens a new one.
   */
  endedBy(client: ZooKeeperLockClient, error: unknown): boolean {
    const code = zkErrorCode(error);
    if (code === ZK_ERRORS.SESSION_EXPIRED || code === ZK_ERRORS.CLOSING || code === ZK_ERRORS.INVALID_STATE) this.end(client, 'expired');
    return this.ended.has(client);
  }

  async close(): Promise<void> {
    this.closing = true;
    // A connection still being made is given up now, not when its connect timeout ends: until then its
    // client keeps retrying (against a server that may never come) and keeps the process alive.
    this.abandonConnect?.();
    this.live?.liveness.stop();
    const current = this.current;
    this.current = undefined;
    if (current) (await current.catch(() => undefined))?.close();
  }

  private newClient(config: ZooKeeperClientConfig): ZooKeeperSessionClient {
    if (this.hooks.createClient) return this.hooks.createClient(config);
    return new ZooKeeperClient(loadPeerDependency<NzkModule>('node-zookeeper-client', this.strategy), config);
  }

  private async open(): Promise<ZooKeeperSessionClient> {
    const requestedTimeout = this.options.sessionTimeout ?? DEFAULT_SESSION_TIMEOUT_MS;
    const raw = this.newClient({ connect: this.options.connect, timeout: requestedTimeout });
    // The server creates the session after this: it has heard from us no earlier.
    const started = livenessNow();
    const elapsed = (): number => Math.round(livenessNow() - started);
    await new Promise<void>((resolve, reject) => {
      const giveUp = (): void => {
        clearTimeout(timer);
        this.abandonConnect = undefined;
        raw.close();
        reject(new LockBackendUnavailableError(this.strategy, `connect to ZooKeeper (${this.options.connect})`, elapsed()));
      };
      const timer = setTimeout(giveUp, this.connectTimeoutMs);
      this.abandonConnect = giveUp;
      raw.once('connect', () => {
        clearTimeout(timer);
        this.abandonConnect = undefined;
        resolve();
      });
      raw.init({});
    });
    const client = raw;
    const liveness = new SessionLiveness({
      // An answer is what counts, also "no node" (a chroot whose root is not created yet).
      probe: () =>
        client.exists('/', false).catch((error: unknown) => {
          if (zkErrorCode(error) !== ZK_ERRORS.NO_NODE) throw error;
        }),
      sessionTimeoutMs: () => (raw.timeout > 0 ? raw.timeout : requestedTimeout),
      heardAt: started,
      onPresumedExpired: () => this.giveUp({ client, raw, liveness }),
    });
    raw.on('connecting', () => liveness.disconnected());
    raw.on('connect', () => liveness.connected());
    // The session ended (expired, or closed by the server): its ephemeral nodes are gone.
    raw.on('close', () => this.end(client, 'expired'));
    liveness.connected();
    // A connect slower than the session timeout leaves nothing known of when the server last heard from
    // us but the start: the probe sent with the connect tells, before the session is handed out (it would
    // be given up at once otherwise).
    if (liveness.presumedExpired()) await this.firstAnswer(liveness, raw, started, elapsed);
    if (this.options.digestAuth) {
      try {
        await new Promise<void>((resolve, reject) =>
          raw.add_auth('digest', this.options.digestAuth as string, (rc, error) =>
            rc === 0 ? resolve() : reject(new LockBackendUnavailableError(this.strategy, `authenticate to ZooKeeper (${error})`, elapsed())),
          ),
        );
      } catch (error) {
        // Never handed out: closed quietly (nobody listens for the end of a session they never got).
        liveness.stop();
        this.ended.set(client, 'expired');
        raw.close();
        throw error;
      }
    }
    this.live = { client, raw, liveness };
    return client;
  }

  /** Waits for the next answered probe, within what is left of the connect timeout. */
  private async firstAnswer(liveness: SessionLiveness, raw: ZooKeeperSessionClient, started: number, elapsed: () => number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const answered = await Promise.race([
      liveness.nextAnswer().then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, started + this.connectTimeoutMs - livenessNow())))),
    ]);
    clearTimeout(timer);
    if (answered) return;
    liveness.stop();
    raw.close();
    throw new LockBackendUnavailableError(this.strategy, `connect to ZooKeeper (${this.options.connect}: no answer after the connect)`, elapsed());
  }

  /**
   * Not heard from for as long as the server may take to expire the session (cut off, or frozen). With
   * locks held or waited for, it is treated as expired now: their holders are told, never later than the
   * server could let another holder in, and their waiters queue again. The handle is closed, so this
   * session never comes back: if the server still has it, it expires there (or ends at once if the client
   * had just reconnected, since a connected handle closes its session). Without locks, nothing is at
   * stake: the session reconnects, or its expiry is reported as usual; unless `always` (a caller is about
   * to use it, or asks whether it lives), since the calls made on it would fail.
   */
  private giveUp({ client, raw }: LiveSession, always = false): void {
    const holdsLocks = this.hooks.holdsLocks ?? (() => this.expiryListeners.size > 0);
    if (this.closing || this.ended.has(client) || !(always || holdsLocks())) return;
    this.end(client, 'given-up');
    raw.close();
  }

  /** Ends a session once (its close event follows a give-up): the next operation opens a new one. */
  private end(client: ZooKeeperLockClient, how: ZooKeeperSessionEnd): void {
    if (this.ended.has(client)) return;
    this.ended.set(client, how);
    if (this.live?.client === client) {
      this.live.liveness.stop();
      this.live = undefined;
      this.current = undefined;
    }
    if (this.closing) return;
    const listeners = [...this.expiryListeners];
    this.expiryListeners.clear();
    for (const listener of listeners) listener(how);
  }
}

/** The open session: its client as the strategy uses it, the same client as the session holds it, and the count of its liveness. */
interface LiveSession {
  readonly client: ZooKeeperLockClient;
  readonly raw: ZooKeeperSessionClient;
  readonly liveness: SessionLiveness;
}
