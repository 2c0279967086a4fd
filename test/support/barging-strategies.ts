import { Redis } from 'ioredis';
import { RedisLockStrategy } from '@app/distributed-lock/strategies/redis';

/** What a test file of the Redis barging mode works with (see `bargingStrategies`). */
export interface BargingStrategies {
  /** A client of the test's own, to read the keys behind the strategies' backs; open from `beforeAll` on. */
  readonly admin: Redis;
  /** A strategy in barging mode (`fair: false`) unless `options` say otherwise, closed after the file. */
  make(options?: { fair?: boolean; bargeWindowMs?: number; recheckInterval?: number }): RedisLockStrategy;
}

/**
 * Registers, in the calling `describe`, the opening of an admin client and the closing of every strategy
 * made: the fixture the lock's and the semaphore's barging tests share.
 */
export function bargingStrategies(): BargingStrategies {
  const url = (): string => process.env.LOCK_TEST_REDIS_URL as string;
  const strategies: RedisLockStrategy[] = [];
  let admin: Redis | undefined;
  beforeAll(() => {
    admin = new Redis(url());
  });
  afterAll(async () => {
    await Promise.all(strategies.map((strategy) => strategy.close()));
    admin?.disconnect();
  });
  return {
    get admin(): Redis {
      if (!admin) throw new Error('the admin client opens in beforeAll');
      return admin;
    },
    make(options = {}) {
      const strategy = new RedisLockStrategy({ connection: url(), fair: false, ...options });
      strategies.push(strategy);
      return strategy;
    },
  };
}
