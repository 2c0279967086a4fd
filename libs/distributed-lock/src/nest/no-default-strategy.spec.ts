import 'reflect-metadata';
import { Injectable, Module, type DynamicModule, type Type } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { StrategyNotRegisteredError } from '../errors/strategy-not-registered.error';
import { LockService } from '../locking/lock-service';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import { InjectLockService } from './decorators/inject-lock-service.decorator';
import { Locked } from './decorators/locked.decorator';
import { ScheduledLock } from './decorators/scheduled-lock.decorator';
import { DistributedLockModule } from './distributed-lock.module';

// Two strategies and none named "default": nothing is wrong until something locks without naming one, and
// then the error names that thing, not an option (`defaultStrategy`) the application never set.
const twoStrategies = (): DynamicModule => DistributedLockModule.forRoot({ strategies: { redis: new InMemoryLockStrategy(), orders: new InMemoryLockStrategy() } });

async function boot(imports: Array<Type | DynamicModule>, providers: Type[] = []): Promise<TestingModule> {
  const app = await Test.createTestingModule({ imports, providers }).compile();
  await app.init();
  return app;
}

async function bootError(imports: Array<Type | DynamicModule>, providers: Type[] = []): Promise<StrategyNotRegisteredError> {
  const error = await boot(imports, providers).then(
    async (app) => {
      await app.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StrategyNotRegisteredError);
  expect((error as Error).message).not.toContain('defaultStrategy');
  return error as StrategyNotRegisteredError;
}

describe('several strategies, none of them "default"', () => {
  it('boots, and locks where a strategy is named', async () => {
    @Injectable()
    class Orders {
      constructor(@InjectLockService('orders') readonly locks: LockService) {}
      @Locked('order:{0}', { strategy: 'orders' })
      async ship(id: string): Promise<string> {
        return this.locks.currentLock()?.key ?? 'unlocked';
      }
    }
    @Module({ imports: [DistributedLockModule.forFeature({ strategy: 'orders' })], providers: [Orders] })
    class OrdersModule {}
    const app = await boot([twoStrategies(), OrdersModule]);
    try {
      expect(await app.get(Orders).ship('7')).toBe('order:7');
    } finally {
      await app.close();
    }
  });

  it('@Locked without a strategy fails the bootstrap naming Class#method', async () => {
    @Injectable()
    class Shipping {
      @Locked('order:{0}')
      async ship(_id: string): Promise<void> {}
    }
    const error = await bootError([twoStrategies()], [Shipping]);
    expect(error.message).toMatch(/^Shipping#ship names no strategy, so it locks on the default one, and no strategy is registered as "default" \(registered: "redis", "orders"\)/);
    expect(error.message).toContain('@Locked(key, { strategy: "redis" })');
  });

  it('@ScheduledLock without a strategy fails the bootstrap naming Class#method', async () => {
    @Injectable()
    class Reports {
      @ScheduledLock({ lockAtMostFor: 1_000 })
      async nightly(): Promise<void> {}
    }
    expect((await bootError([twoStrategies()], [Reports])).message).toMatch(/^Reports#nightly names no strategy/);
  });

  it('injecting LockService without a name fails the bootstrap naming the class that injects it', async () => {
    @Injectable()
    class Checkout {
      constructor(readonly locks: LockService) {}
    }
    expect((await bootError([twoStrategies()], [Checkout])).message).toMatch(/^Checkout, which injects LockService, names no strategy/);
  });

  it('forFeature without a strategy fails the bootstrap naming that forFeature', async () => {
    @Module({ imports: [DistributedLockModule.forFeature({ keyPrefix: 'inventory:' })] })
    class InventoryModule {}
    expect((await bootError([twoStrategies(), InventoryModule])).message).toMatch(/^DistributedLockModule\.forFeature\(\{ keyPrefix: "inventory:" \}\) names no strategy/);
  });
});
