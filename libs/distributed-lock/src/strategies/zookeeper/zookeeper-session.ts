import { LockBackendUnavailableError } from '../../errors/lock-backend-unavailable.error';
import { loadPeerDependency } from '../load-peer-dependency';
import { ZK_ERRORS, zkErrorCode, type ZooKeeperLockClient, type ZooKeeperSessionClient } from './zookeeper-client.type';
import { withNativeCalls } from './zookeeper-internals';

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
  /**
   * Send the lock protocol's calls (create, exists, children, delete) straight to the `zookeeper` package's
   * native binding, with the same arguments, answers and errors as its promise API (see
   * `zookeeper-internals.ts`). `false`: through the package's promise API only, a little slower; for a
   * package version whose binding this path no longer fits. Default true.
   */
  readonly fastPaths?: boolean;
}

/** How a session ended, as its listeners are told. */
export type ZooKeeperSessionEnd =
  /**
   * The server expired (or closed) it: its ephemeral nodes are gone. The native client learns this only
   * once it reaches the ensemble again.
   */
  | 'expired'
  /**
   * Given up here: cut off from the ensemble while locks were held, for as long as the server may take to
   * expire it (see LOSS_MARGIN_FRACTION). It may still live on the server, and its ephemeral nodes with it,
   * until it expires there; its handle is closed, so it never comes back.
   */
  | 'given-up';

/** What the native client is built from (some of the `zookeeper` package's constructor options). */
export interface ZooKeeperClientConfig {
  readonly connect: string;
  /** Requested session timeout in ms. */
  readonly timeout: number;
  readonly host_order_deterministic: boolean;
}

/** Hooks of a session: the strategy's view of it, and (for tests) where clients come from. */
export interface ZooKeeperSessionHooks {
  /**
   * Whether locks are held on the session now: a session cut off from the ensemble is given up only then.
   * Default: whether anyone listens for its end.
   */
  readonly holdsLocks?: () => boolean;
  /** Makes a native client. Default: the `zookeeper` package's (an optional peer dependency). */
  readonly createClient?: (config: ZooKeeperClientConfig) => ZooKeeperSessionClient;
}

/** Default requested session timeout, in ms. */
const DEFAULT_SESSION_TIMEOUT_MS = 10_000;

/**
 * Share of the session timeout by which a cut-off session is given up before the server could expire
 * it: covers our timer firing late (a busy event loop) and the clocks of client and server not running at
 * quite the same rate. The server's own rounding (an expiry falls on the next tick) only adds to it.
 */
const LOSS_MARGIN_FRACTION = 0.1;

/** The margin never goes below this, in ms. */
const MIN_LOSS_MARGIN_MS = 100;

/**
 * A connected session is probed this many times per session timeout (an `exists` of "/"). The answers
 * tell when the server last heard from us; they replace the native client's own pings (sent after a third
 * of the timeout without a request), which it does not report.
 */
const PROBES_PER_SESSION_TIMEOUT = 4;

/**
 * One ZooKeeper session, kept apart from the lock protocol (as etcd's concurrency.Session is). A lost
 * connection is "unknown" at first: the session (and its ephemeral nodes) may still live, and the client
 * reconnects by itself. An expired session is final: every lock held on it is lost (listeners are told),
 * and the next operation opens a new session.
 *
 * The native client reports an expiry only once it reaches the ensemble again, which may be long after
 * the server expired the session and let another holder in. So, like Curator's connection state manager
 * ("SUSPENDED, then LOST once the session timeout has passed"), a session that stays disconnected while
 * locks are held is given up before the server could have expired it: its listeners are told, its
 * handle is closed, and the next operation opens a new session (see SessionLiveness).
 */
export class ZooKeeperSession {
  private current: Promise<ZooKeeperLockClient> | undefined;
  /** The open session, once connected. */
  private live: { readonly client: ZooKeeperLockClient; readonly liveness: SessionLiveness } | undefined;
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
    // first lock (the native module is loaded once; Node caches it).
    if (!hooks.createClient) loadPeerDependency<typeof import('zookeeper')>('zookeeper', strategy);
  }

  /** The connected client, opening a session if there is none. Never opens one once closed. */
  client(): Promise<ZooKeeperLockClient> {
    // A late caller (an orphan sweep, a lock attempt that was in flight) must not open a session nobody
    // would close: its native client would keep reconnecting, and the process alive, forever.
    if (this.closing) return Promise.reject(new LockBackendUnavailableError(this.strategy, 'open a session (the strategy is closed)', 0));
    this.current ??= this.open().catch((error: unknown) => {
      this.current = undefined;
      throw error;
    });
    return this.current;
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

  async close(): Promise<void> {
    this.closing = true;
    // A connection still being made is given up now, not when its connect timeout ends: until then its
    // native client keeps retrying (against a server that may never come) and keeps the process alive.
    this.abandonConnect?.();
    this.live?.liveness.stop();
    const current = this.current;
    this.current = undefined;
    if (current) (await current.catch(() => undefined))?.close();
  }

  private newClient(config: ZooKeeperClientConfig): ZooKeeperSessionClient {
    if (this.hooks.createClient) return this.hooks.createClient(config);
    const ZooKeeper = loadPeerDependency<typeof import('zookeeper')>('zookeeper', this.strategy);
    return new ZooKeeper({ ...config, debug_level: ZooKeeper.constants.ZOO_LOG_LEVEL_ERROR }) as unknown as ZooKeeperSessionClient;
  }

  private async open(): Promise<ZooKeeperLockClient> {
    const requestedTimeout = this.options.sessionTimeout ?? DEFAULT_SESSION_TIMEOUT_MS;
    const raw = this.newClient({
      connect: this.options.connect,
      timeout: requestedTimeout,
      host_order_deterministic: false,
    });
    // The server creates the session after this: it has heard from us no earlier.
    const started = Date.now();
    await new Promise<void>((resolve, reject) => {
      const giveUp = (): void => {
        clearTimeout(timer);
        this.abandonConnect = undefined;
        raw.close();
        reject(new LockBackendUnavailableError(this.strategy, `connect to ZooKeeper (${this.options.connect})`, Date.now() - started));
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
    const client = this.options.fastPaths === false ? raw : withNativeCalls(raw);
    const liveness = new SessionLiveness({
      // An answer is what counts, also "no node" (a chroot whose root is not created yet).
      probe: () =>
        client.exists('/', false).catch((error: unknown) => {
          if (zkErrorCode(error) !== ZK_ERRORS.NO_NODE) throw error;
        }),
      sessionTimeoutMs: () => (raw.timeout > 0 ? raw.timeout : requestedTimeout),
      heardAt: started,
      onPresumedExpired: () => this.giveUp(client, raw),
    });
    raw.on('connecting', () => liveness.disconnected());
    raw.on('connect', () => liveness.connected());
    // The session ended (expired, or closed by the server): its ephemeral nodes are gone.
    raw.on('close', () => this.end(client, 'expired'));
    liveness.connected();
    if (this.options.digestAuth) {
      try {
        await new Promise<void>((resolve, reject) =>
          (raw as unknown as { add_auth(scheme: string, auth: string, cb: (rc: number, error: string) => void): void }).add_auth('digest', this.options.digestAuth as string, (rc, error) =>
            rc === 0 ? resolve() : reject(new LockBackendUnavailableError(this.strategy, `authenticate to ZooKeeper (${error})`, Date.now() - started)),
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
    this.live = { client, liveness };
    return client;
  }

  /**
   * Cut off for as long as the server may take to expire the session. With locks held, it is treated as
   * expired now: their holders are told, never later than the server could let another holder in. The
   * handle is closed, so this session never comes back: if the server still has it, it expires there (or
   * ends at once if the client had just reconnected, since a connected handle closes its session).
   * Without locks, nothing is at stake: the session reconnects, or its expiry is reported as usual.
   */
  private giveUp(client: ZooKeeperLockClient, raw: ZooKeeperSessionClient): void {
    const holdsLocks = this.hooks.holdsLocks ?? (() => this.expiryListeners.size > 0);
    if (this.closing || this.ended.has(client) || !holdsLocks()) return;
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

/** What SessionLiveness needs of its session. */
interface LivenessDeps {
  /** A cheap request; resolves once the server answered. */
  probe(): Promise<unknown>;
  /** The session timeout the server granted, in ms. */
  sessionTimeoutMs(): number;
  /** A time (ms) at or before which the server last heard from us, to begin with. */
  heardAt: number;
  /** The session may have expired on the server by now. */
  onPresumedExpired(): void;
}

/**
 * When a disconnected session may have expired on the server. The server expires a session one session
 * timeout after it last heard from the client (rounded up to its next tick), so the session is safe until
 * then and no longer. We cannot know that moment exactly, but we know a time at or before it: the sending
 * of the last request the server answered (it received it later), or of the (re)connect that it accepted.
 * The session is presumed expired at that time plus the negotiated session timeout, minus a margin
 * (LOSS_MARGIN_FRACTION): early rather than late, so a holder is never told after another one got in.
 *
 * Probes (PROBES_PER_SESSION_TIMEOUT) keep that time recent, so a cut at time c is reported between
 * about c + 0.65 × timeout (the last answered probe went out a probe interval before the cut) and c + 0.9 ×
 * timeout (it came right before the cut), plus however late our timer fires. The count starts when the
 * native client raises 'connecting': at once when the connection breaks, at the latest two thirds of the
 * timeout after it last heard from the server (its receive timeout); if that is past the point already,
 * the session is given up at once. A reconnect before the point ('connect') cancels the count.
 */
class SessionLiveness {
  private heardAt: number;
  private disconnectedAt: number | undefined;
  private probeTimer: NodeJS.Timeout | undefined;
  private probing = false;
  private lossTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly deps: LivenessDeps) {
    this.heardAt = deps.heardAt;
  }

  /** Connected (again): the count stops, and probing starts with one probe now. */
  connected(): void {
    if (this.stopped) return;
    // A reconnect is sent after the disconnect was noticed, and the server accepted it.
    if (this.disconnectedAt !== undefined) this.heardAt = Math.max(this.heardAt, this.disconnectedAt);
    this.disconnectedAt = undefined;
    clearTimeout(this.lossTimer);
    this.lossTimer = undefined;
    this.probe();
    if (!this.probeTimer) {
      this.probeTimer = setInterval(() => this.probe(), Math.max(1, Math.floor(this.deps.sessionTimeoutMs() / PROBES_PER_SESSION_TIMEOUT)));
      this.probeTimer.unref?.();
    }
  }

  /** The connection is lost: the session is presumed expired unless it reconnects in time. */
  disconnected(): void {
    if (this.stopped || this.disconnectedAt !== undefined) return;
    this.disconnectedAt = Date.now();
    const timeout = this.deps.sessionTimeoutMs();
    const margin = Math.max(MIN_LOSS_MARGIN_MS, timeout * LOSS_MARGIN_FRACTION);
    const presumedExpiredAt = this.heardAt + timeout - margin;
    this.lossTimer = setTimeout(() => {
      this.lossTimer = undefined;
      if (!this.stopped && this.disconnectedAt !== undefined) this.deps.onPresumedExpired();
    }, Math.max(0, presumedExpiredAt - Date.now()));
    this.lossTimer.unref?.();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.probeTimer);
    clearTimeout(this.lossTimer);
    this.probeTimer = undefined;
    this.lossTimer = undefined;
  }

  private probe(): void {
    // One at a time: a probe sent into a lost connection fails with it, or is answered after a reconnect.
    if (this.stopped || this.probing) return;
    this.probing = true;
    const sentAt = Date.now();
    this.deps.probe().then(
      () => {
        this.probing = false;
        this.heardAt = Math.max(this.heardAt, sentAt);
      },
      () => {
        this.probing = false; // lost with the connection: nothing learned
      },
    );
  }
}
