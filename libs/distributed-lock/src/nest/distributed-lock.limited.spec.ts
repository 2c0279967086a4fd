import 'reflect-metadata';
import { Injectable, SetMetadata, type Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { InvalidLockKeyError } from '../errors/invalid-lock-key.error';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { StrategyNotRegisteredError } from '../errors/strategy-not-registered.error';
import { currentLock } from '../locking/lock-context';
import type { LockStrategy } from '../locking/lock-strategy.interface';
import { currentPermit } from '../locking/permit-context';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import { Limited } from './decorators/limited.decorator';
import { Locked } from './decorators/locked.decorator';
import { DistributedLockModule } from './distributed-lock.module';

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));
const CUSTOM_METADATA = 'test:custom';

@Injectable()
class PaymentService {
  inside = 0;
  peak = 0;

  @SetMetadata(CUSTOM_METADATA, 'kept')
  @Limited('payments:{0}', { permits: 2 })
  async charge(provider: string, amount: number): Promise<{ key: string | undefined; permits: number | undefined; token: number | undefined; amount: number }> {
    this.inside += 1;
    this.peak = Math.max(this.peak, this.inside);
    await sleep(10);
    this.inside -= 1;
    const permit = currentPermit();
    return { key: permit?.key, permits: permit?.permits, token: permit?.fencingToken, amount };
  }

  @Limited((order: { id: number }, _holdMs: number) => `refund:${order.id}`, { permits: 1, waitTimeout: 50 })
  async refund(order: { id: number }, holdMs: number): Promise<string | undefined> {
    await sleep(holdMs);
    return currentPermit()?.key;
  }

  @Locked('stock:{0}')
  @Limited('checkout', { permits: 3 })
  async checkout(sku: string): Promise<[string | undefined, string | undefined]> {
    return [currentPermit()?.key, currentLock()?.key];
  }
}

async function boot(strategy: LockStrategy, providers: Type[]): Promise<import('@nestjs/testing').TestingModule> {
  const moduleRef = await Test.createTestingModule({ imports: [DistributedLockModule.forRoot({ strategies: { default: strategy }, keyPrefix: 'app:' })], providers }).compile();
  await moduleRef.init();
  return moduleRef;
}

/** A strategy with locks only. */
function withoutSemaphores(): LockStrategy {
  const memory = new InMemoryLockStrategy();
  return {
    name: 'locks-only',
    capabilities: { fencing: true, fifo: true, sharedLocks: false, crossProcess: false },
    tryAcquire: (request) => memory.tryAcquire(request),
    extend: (lease, ttl) => memory.extend(lease, ttl),
    release: (lease) => memory.release(lease),
    close: () => memory.close(),
  };
}

describe('@Limited', () => {
  it('runs at most `permits` calls at once, keeps this, arguments and metadata, and exposes the permit', async () => {
    const app = await boot(new InMemoryLockStrategy(), [PaymentService]);
    const service = app.get(PaymentService);
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => service.charge('stripe', i)));
    expect(service.peak).toBe(2);
    expect(results.map((r) => r.amount)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(results[0]).toMatchObject({ key: 'app:payments:stripe', permits: 2, token: expect.any(Number) });
    expect(Reflect.getMetadata(CUSTOM_METADATA, service.charge)).toBe('kept');
    expect(service.charge.name).toBe('charge');
    expect(await service.refund({ id: 7 }, 0)).toBe('app:refund:7');
    const [first, second] = await Promise.allSettled([service.refund({ id: 8 }, 200), service.refund({ id: 8 }, 0)]);
    expect(first.status).toBe('fulfilled');
    expect(second.status === 'rejected' && second.reason).toBeInstanceOf(LockAcquireTimeoutError);
    // With @Locked on the same method: the permit first, then the lock, both visible inside.
    expect(await service.checkout('sku-1')).toEqual(['app:checkout', 'app:stock:sku-1']);
    await app.close();
  });

  it('fails at bootstrap, naming Class#method, for bad options, an unknown strategy or a strategy without semaphores', async () => {
    const cases: Array<[() => Type, LockStrategy, unknown, RegExp]> = [
      [
        () => {
          @Injectable()
          class BadPermits {
            @Limited('k', { permits: 0 })
            run(): void {}
          }
          return BadPermits;
        },
        new InMemoryLockStrategy(),
        InvalidLockOptionsError,
        /BadPermits#run @Limited options\.permits/,
      ],
      [
        () => {
          @Injectable()
          class HeavyWeight {
            @Limited('k', { permits: 2, weight: 3 })
            run(): void {}
          }
          return HeavyWeight;
        },
        new InMemoryLockStrategy(),
        InvalidLockOptionsError,
        /HeavyWeight#run @Limited options\.weight/,
      ],
      [
        () => {
          @Injectable()
          class UnknownStrategy {
            @Limited('k', { permits: 2, strategy: 'nope' })
            run(): void {}
          }
          return UnknownStrategy;
        },
        new InMemoryLockStrategy(),
        StrategyNotRegisteredError,
        /nope/,
      ],
      [
        () => {
          @Injectable()
          class NoSemaphores {
            @Limited('k', { permits: 2 })
            run(): void {}
          }
          return NoSemaphores;
        },
        withoutSemaphores(),
        InvalidLockOptionsError,
        /NoSemaphores#run.*needs a strategy with semaphores/,
      ],
      [
        () => {
          @Injectable()
          class BadTemplate {
            @Limited('k:{x}', { permits: 2 })
            run(): void {}
          }
          return BadTemplate;
        },
        new InMemoryLockStrategy(),
        InvalidLockKeyError,
        /BadTemplate#run @Limited key/,
      ],
    ];
    for (const [make, strategy, type, message] of cases) {
      const error = await boot(strategy, [make()]).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(type);
      expect(String((error as Error).message)).toMatch(message);
    }
  });
});
