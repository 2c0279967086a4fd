import { randomUUID } from 'node:crypto';
import { DistributedLockError, LockAcquireAbortedError, LockManager, LockService } from '@app/distributed-lock';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis';

const run = randomUUID().slice(0, 8);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const OPERATION_TIMEOUT = 1_000;

/**
 * A server that stops answering while a caller waits in its queue (it answered before): close() and the
 * caller's own abort must still end the wait promptly (within one operation timeout), not at the end of
 * the wait, and close() must return. The server is frozen with SIGSTOP, a private one.
 */
describe('A server that stops answering while callers wait', () => {
  let redis: PrivateRedis;

  beforeEach(async () => {
    redis = await startPrivateRedis();
  });

  afterEach(async () => {
    await redis.stop();
  });

  async function queuedWaiter(signal?: AbortSignal): Promise<{ holder: LockManager; waiterSide: LockManager; waiting: Promise<unknown> }> {
    const holder = new LockManager(new RedisLockStrategy({ connection: redis.url }), { operationTimeout: OPERATION_TIMEOUT });
    const waiterSide = new LockManager(new RedisLockStrategy({ connection: redis.url }), { operationTimeout: OPERATION_TIMEOUT });
    const key = `frozen:${run}:${randomUUID().slice(0, 6)}`;
    await new LockService(holder).acquire(key);
    const waiting = new LockService(waiterSide).acquire(key, { waitTimeout: 20_000, signal }).then(
      () => 'acquired',
      (error: unknown) => error,
    );
    await sleep(300); // queued; the server answered its first requests
    return { holder, waiterSide, waiting };
  }

  it('close() ends the wait and returns within about one operation timeout', async () => {
    const { holder, waiterSide, waiting } = await queuedWaiter();
    redis.freeze();
    const started = Date.now();
    const closed = waiterSide.close().then(
      () => 'closed',
      (error: unknown) => error,
    );
    const outcome = await waiting;
    const endedAfter = Date.now() - started;
    await closed;
    const closedAfter = Date.now() - started;
    redis.thaw();
    await holder.close().catch(() => undefined);
    expect(outcome).toBeInstanceOf(DistributedLockError);
    expect(endedAfter).toBeLessThan(OPERATION_TIMEOUT + 1_500);
    // The wait's strategy call, then the strategy's own close, each bounded by the operation timeout.
    expect(closedAfter).toBeLessThan(3 * OPERATION_TIMEOUT + 2_000);
  }, 30_000);

  it("the caller's abort ends the wait within about one operation timeout", async () => {
    const controller = new AbortController();
    const { holder, waiterSide, waiting } = await queuedWaiter(controller.signal);
    redis.freeze();
    const started = Date.now();
    controller.abort();
    const outcome = await waiting;
    const endedAfter = Date.now() - started;
    redis.thaw();
    await Promise.all([holder.close(), waiterSide.close()].map((closing) => closing.catch(() => undefined)));
    expect(outcome).toBeInstanceOf(LockAcquireAbortedError);
    expect(endedAfter).toBeLessThan(OPERATION_TIMEOUT + 1_500);
  }, 30_000);
});
