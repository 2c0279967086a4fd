import { EventEmitter } from 'node:events';
import type { ZooKeeperSessionClient } from './zookeeper-client.type';
import type { ZooKeeperClientConfig } from './zookeeper-client';
import { ZooKeeperSession, type ZooKeeperSessionEnd } from './zookeeper-session';

/** A native client that connects at once and answers probes as told; tests raise its events. */
class FakeNativeClient extends EventEmitter {
  closed = false;
  readonly probesSent: number[] = [];
  /** How probes are answered: found, "no node" (a chroot not created yet), or not at all (a frozen server). */
  answer: 'found' | 'no-node' | 'none' = 'found';

  constructor(
    readonly config: ZooKeeperClientConfig,
    /** The session timeout the "server" grants. */
    readonly timeout: number,
  ) {
    super();
  }

  init(): this {
    queueMicrotask(() => this.emit('connect'));
    return this;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.emit('close');
  }

  exists(): Promise<unknown> {
    this.probesSent.push(Date.now());
    if (this.answer === 'no-node') return Promise.reject(new Error('-101 no node'));
    return this.answer === 'found' ? Promise.resolve({}) : new Promise(() => undefined);
  }
}

const SESSION_TIMEOUT_MS = 4_000;
/** What the session is given up at, after the server last heard from us: the timeout minus 10 %. */
const SAFE_FOR_MS = 3_600;

function setUp(options: { holdsLocks?: boolean; grantedTimeout?: number } = {}): { session: ZooKeeperSession; clients: FakeNativeClient[]; holding: { value: boolean } } {
  const clients: FakeNativeClient[] = [];
  const holding = { value: options.holdsLocks ?? true };
  const session = new ZooKeeperSession({ connect: '127.0.0.1:1', sessionTimeout: SESSION_TIMEOUT_MS }, 'zookeeper', 1_000, {
    holdsLocks: () => holding.value,
    createClient: (config) => {
      const client = new FakeNativeClient(config, options.grantedTimeout ?? config.timeout);
      clients.push(client);
      return client as unknown as ZooKeeperSessionClient;
    },
  });
  return { session, clients, holding };
}

/** Lets promise callbacks run (fake timers hold back only timers). */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i += 1) await Promise.resolve();
};

describe('ZooKeeperSession: a session cut off from the ensemble', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('is given up once the server may have expired it: listeners are told, its handle is closed, the next call opens a new session', async () => {
    const { session, clients } = setUp();
    const first = await session.client();
    await settle();
    const ends: ZooKeeperSessionEnd[] = [];
    session.onExpired((end) => ends.push(end));
    const heardAt = Date.now(); // the probe sent on connect was answered
    clients[0].answer = 'none';
    vi.advanceTimersByTime(500);
    clients[0].emit('connecting');
    vi.advanceTimersByTime(heardAt + SAFE_FOR_MS - Date.now() - 1);
    expect(ends).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(ends).toEqual(['given-up']);
    expect(clients[0].closed).toBe(true);
    // Its own close event (which follows) is not a second end.
    expect(ends).toEqual(['given-up']);
    const second = await session.client();
    expect(second).not.toBe(first);
    expect(clients).toHaveLength(2);
    await session.close();
  });

  it.each(['found', 'no-node'] as const)('counts from when the last answered probe was sent (answer: %s), in the session timeout the server granted', async (answer) => {
    const { session, clients } = setUp({ grantedTimeout: 6_000 });
    await session.client();
    clients[0].answer = answer;
    await settle();
    const ends: ZooKeeperSessionEnd[] = [];
    session.onExpired((end) => ends.push(end));
    // Probes go out a quarter of the granted timeout apart and are answered.
    for (let i = 0; i < 2; i += 1) {
      vi.advanceTimersByTime(1_500);
      await settle();
    }
    expect(clients[0].probesSent).toHaveLength(3);
    const lastAnsweredSentAt = clients[0].probesSent[2];
    clients[0].answer = 'none';
    vi.advanceTimersByTime(1_400); // a probe sent now goes unanswered
    clients[0].emit('connecting');
    vi.advanceTimersByTime(lastAnsweredSentAt + 6_000 - 600 - Date.now() - 1);
    expect(ends).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(ends).toEqual(['given-up']);
    await session.close();
  });

  it('is kept when it reconnects in time', async () => {
    const { session, clients } = setUp();
    const first = await session.client();
    await settle();
    const ends: ZooKeeperSessionEnd[] = [];
    session.onExpired((end) => ends.push(end));
    clients[0].emit('connecting');
    vi.advanceTimersByTime(2_000);
    clients[0].emit('connect');
    await settle();
    // Async: each probe's answer is taken in before the next timer fires, as on a running event loop.
    await vi.advanceTimersByTimeAsync(10_000);
    expect(ends).toEqual([]);
    expect(clients[0].closed).toBe(false);
    expect(await session.client()).toBe(first);
    await session.close();
  });

  it('is kept when no lock is held on it: nothing is at stake, the expiry is reported as usual', async () => {
    const { session, clients } = setUp({ holdsLocks: false });
    await session.client();
    await settle();
    const ends: ZooKeeperSessionEnd[] = [];
    session.onExpired((end) => ends.push(end));
    clients[0].emit('connecting');
    vi.advanceTimersByTime(10_000);
    expect(ends).toEqual([]);
    expect(clients[0].closed).toBe(false);
    clients[0].close(); // the server said it expired, once reached again
    expect(ends).toEqual(['expired']);
    await session.close();
  });

  it('is ended at the first look after a freeze past the time the server may expire it: isAlive is false, listeners are told first, the next call opens a new session', async () => {
    const { session, clients } = setUp();
    const first = await session.client();
    await settle();
    const ends: ZooKeeperSessionEnd[] = [];
    session.onExpired((end) => ends.push(end));
    // Frozen (SIGSTOP): the monotonic clock runs on, and no timer of ours has fired yet on waking.
    const frozenAt = performance.now();
    const clock = vi.spyOn(performance, 'now').mockReturnValue(frozenAt + SAFE_FOR_MS - 1);
    expect(session.isAlive(first)).toBe(true);
    clock.mockReturnValue(frozenAt + 6_000);
    expect(session.isAlive(first)).toBe(false);
    expect(ends).toEqual(['given-up']);
    expect(clients[0].closed).toBe(true);
    clock.mockRestore();
    const second = await session.client();
    expect(second).not.toBe(first);
    expect(session.isAlive(second)).toBe(true);
    await session.close();
  });

  it('hands out no session the server may have expired, with no lock held either: the caller waits for a new one', async () => {
    const { session, clients } = setUp({ holdsLocks: false });
    const first = await session.client();
    await settle();
    const clock = vi.spyOn(performance, 'now').mockReturnValue(performance.now() + 6_000);
    const second = await session.client();
    clock.mockRestore();
    expect(second).not.toBe(first);
    expect(clients[0].closed).toBe(true);
    await session.close();
  });

  it.each(['-112 session expired', '-116 zookeeper is closing', '-9 the request could not be sent'])('ends the session of a call that failed with "%s": listeners are told, the next call opens a new one', async (message) => {
    const { session, clients } = setUp();
    const first = await session.client();
    await settle();
    const ends: ZooKeeperSessionEnd[] = [];
    session.onExpired((end) => ends.push(end));
    expect(session.endedBy(first, new Error('-4 connection loss'))).toBe(false);
    expect(ends).toEqual([]);
    expect(session.endedBy(first, new Error(message))).toBe(true);
    expect(ends).toEqual(['expired']);
    expect(session.isAlive(first)).toBe(false);
    expect(await session.client()).not.toBe(first);
    expect(clients).toHaveLength(2);
    await session.close();
  });

  it('tells a listener for a session that has ended already, at once', async () => {
    const { session, clients } = setUp();
    const client = await session.client();
    await settle();
    session.onExpired(() => undefined); // a lock is held
    clients[0].emit('connecting');
    vi.advanceTimersByTime(SAFE_FOR_MS);
    const late = vi.fn();
    session.onExpired(late, client);
    const cancelled = vi.fn();
    session.onExpired(cancelled, client)();
    await settle();
    expect(late).toHaveBeenCalledWith('given-up');
    expect(cancelled).not.toHaveBeenCalled();
    await session.close();
  });

  it('gives nothing up once closed', async () => {
    const { session, clients } = setUp();
    await session.client();
    await settle();
    const ends: ZooKeeperSessionEnd[] = [];
    session.onExpired((end) => ends.push(end));
    clients[0].emit('connecting');
    await session.close();
    vi.advanceTimersByTime(10_000);
    expect(ends).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('opens no session once closed: a late caller gets LockBackendUnavailableError', async () => {
    const { session, clients } = setUp();
    await session.close();
    await expect(session.client()).rejects.toMatchObject({ name: 'LockBackendUnavailableError', strategy: 'zookeeper' });
    expect(clients).toHaveLength(0);
  });
});
