import 'reflect-metadata';
import { Injectable, Module, type Type } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { LockAcquireTimeoutError } from '../errors/lock-acquire-timeout.error';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { currentLock } from '../locking/lock-context';
import { LockService } from '../locking/lock-service';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import { InjectLockService } from './decorators/inject-lock-service.decorator';
import { Locked } from './decorators/locked.decorator';
import { ScheduledLock } from './decorators/scheduled-lock.decorator';
import { DistributedLockModule } from './distributed-lock.module';
import { LockRegistry } from './lock-registry';

async function boot(imports: unknown[]): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({ imports: imports as Type[] }).compile();
  await moduleRef.init();
  return moduleRef;
}

describe('DistributedLockModule.forFeature: decorated methods lock through the module\'s own LockService', () => {
  it('@Locked and @ScheduledLock use the very instance the module injects, named or not', async () => {
    @Injectable()
    class Pricing {
      constructor(
        readonly locks: LockService,
        @InjectLockService('fast') readonly named: LockService,
      ) {}
      @Locked('price:{0}')
      async reprice(sku: string): Promise<string | undefined> {
        return currentLock()?.key;
      }
      @ScheduledLock({ lockAtMostFor: 1_000 })
      async refresh(): Promise<string | undefined> {
        return currentLock()?.key;
      }
    }
    @Module({ imports: [DistributedLockModule.forFeature({ strategy: 'fast', keyPrefix: 'pricing:' })], providers: [Pricing] })
    class PricingModule {}
    const app = await boot([DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy(), fast: new InMemoryLockStrategy() } }), PricingModule]);
    try {
      const pricing = app.get(Pricing);
      expect(pricing.named).toBe(pricing.locks);
      const locked = vi.spyOn(pricing.locks, 'withLock');
      const scheduled = vi.spyOn(pricing.locks, 'tryAcquire');
      expect(await pricing.reprice('a')).toBe('pricing:price:a');
      expect(await pricing.refresh()).toBe('pricing:Pricing.refresh');
      expect(locked).toHaveBeenCalledTimes(1);
      expect(scheduled).toHaveBeenCalledTimes(1);
    } finally {
      await app.close();
    }
  });

  it('two modules with different forFeature options on one strategy: each method gets its own module\'s prefix, defaults and service', async () => {
    @Injectable()
    class Orders {
      constructor(readonly locks: LockService) {}
      @Locked('item:{0}')
      async take(id: string): Promise<string | undefined> {
        return currentLock()?.key;
      }
      @Locked('audit:{0}', { strategy: 'audit' })
      async audit(id: string): Promise<string | undefined> {
        return currentLock()?.key;
      }
    }
    @Injectable()
    class Returns {
      constructor(readonly locks: LockService) {}
      @Locked('item:{0}')
      async take(id: string): Promise<string | undefined> {
        return currentLock()?.key;
      }
    }
    @Module({ imports: [DistributedLockModule.forFeature({ keyPrefix: 'orders:' })], providers: [Orders] })
    class OrdersModule {}
    // Same strategy (the default), another prefix, and a default that does not wait.
    @Module({ imports: [DistributedLockModule.forFeature({ keyPrefix: 'returns:', defaults: { waitTimeout: 0 } })], providers: [Returns] })
    class ReturnsModule {}
    const app = await boot([DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy(), audit: new InMemoryLockStrategy() } }), OrdersModule, ReturnsModule]);
    try {
      const orders = app.get(Orders);
      const returns = app.get(Returns);
      expect(orders.locks).not.toBe(returns.locks);
      const throughOrders = vi.spyOn(orders.locks, 'withLock');
      const throughReturns = vi.spyOn(returns.locks, 'withLock');
      expect(await orders.take('1')).toBe('orders:item:1');
      expect(await returns.take('1')).toBe('returns:item:1');
      expect([throughOrders.mock.calls.length, throughReturns.mock.calls.length]).toEqual([1, 1]);

      // The returns module's defaults apply to its method: a held key is refused at once, not waited for.
      const held = await returns.locks.acquire('item:2');
      await expect(returns.take('2')).rejects.toBeInstanceOf(LockAcquireTimeoutError);
      await held.release();

      // A method naming another strategy keeps its module's prefix on that strategy.
      const onAudit: string[] = [];
      app.get(LockRegistry).manager('audit').events.on('acquired', (event) => onAudit.push(`${event.strategy} ${event.key}`));
      expect(await orders.audit('9')).toBe('orders:audit:9');
      expect(onAudit).toEqual(['audit orders:audit:9']);
      expect(throughOrders).toHaveBeenCalledTimes(1);
    } finally {
      await app.close();
    }
  });

  it('a module that imports forFeature twice fails the bootstrap, naming Class#method', async () => {
    @Injectable()
    class Twice {
      @Locked('k')
      async run(): Promise<void> {}
    }
    @Module({ imports: [DistributedLockModule.forFeature({ keyPrefix: 'a:' }), DistributedLockModule.forFeature({ keyPrefix: 'b:' })], providers: [Twice] })
    class TwiceModule {}
    const error = await boot([DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() } }), TwiceModule]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidLockOptionsError);
    expect((error as Error).message).toMatch(/Twice#run.*forFeature 2 times/);
  });
});
