import 'reflect-metadata';
import { Controller, Get, Injectable, Module, SetMetadata, type Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { InvalidLockKeyError } from '../errors/invalid-lock-key.error';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { StrategyNotRegisteredError } from '../errors/strategy-not-registered.error';
import { VersionConflictError } from '../errors/version-conflict.error';
import { currentLock } from '../locking/lock-context';
import { LockService } from '../locking/lock-service';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import { InjectLockService } from './decorators/inject-lock-service.decorator';
import { Locked } from './decorators/locked.decorator';
import { OptimisticVersion } from './decorators/optimistic-version.decorator';
import type { DistributedLockModuleOptions, DistributedLockOptionsFactory } from './distributed-lock-options.interface';
import { DistributedLockModule } from './distributed-lock.module';

const CUSTOM_METADATA = 'test:custom';

@Injectable()
class StockService {
  readonly calls: string[] = [];

  @SetMetadata(CUSTOM_METADATA, 'kept')
  @Locked('stock:{0}')
  async deduct(sku: string, quantity: number): Promise<{ self: boolean; key: string | undefined; token: number | undefined; quantity: number }> {
    this.calls.push(sku);
    const lock = currentLock();
    return { self: this instanceof StockService, key: lock?.key, token: lock?.fencingToken, quantity };
  }

  @Locked('order:{0.userId}:{0.orderId}')
  async place(order: { userId: string; orderId: number }): Promise<string | undefined> {
    return currentLock()?.key;
  }

  @Locked((from: string, to: string) => [`account:${from}`, `account:${to}`])
  async transfer(from: string, to: string): Promise<readonly string[]> {
    return [currentLock(`account:${from}`)?.key ?? '', currentLock(`account:${to}`)?.key ?? ''];
  }

  @Locked('stock:{0}')
  async nested(sku: string): Promise<boolean> {
    // Re-enters the lock this call already holds instead of waiting for itself.
    const inner = await this.deduct(sku, 1);
    return inner.key === currentLock()?.key;
  }
}

@Injectable()
class RetryingService {
  attempts = 0;

  @OptimisticVersion({ retries: 3, backoff: { initialDelay: 1, maxDelay: 2 } })
  async update(failures: number): Promise<number> {
    this.attempts += 1;
    if (this.attempts <= failures) throw new VersionConflictError('product', 1, this.attempts, this.attempts + 1);
    return this.attempts;
  }
}

async function boot(imports: unknown[], providers: Type[] = []): Promise<import('@nestjs/testing').TestingModule> {
  const moduleRef = await Test.createTestingModule({ imports: imports as Type[], providers }).compile();
  await moduleRef.init();
  return moduleRef;
}

describe('DistributedLockModule', () => {
  it('forRoot: injects LockService and wraps @Locked methods with templated keys', async () => {
    const memory = new InMemoryLockStrategy();
    const app = await boot([DistributedLockModule.forRoot({ strategies: { default: memory }, keyPrefix: 'app:' })], [StockService]);
    const service = app.get(StockService);
    const result = await service.deduct('sku-1', 3);
    expect(result).toEqual({ self: true, key: 'app:stock:sku-1', token: expect.any(Number), quantity: 3 });
    expect(await service.place({ userId: 'u7', orderId: 9 })).toBe('app:order:u7:9');
    expect(await service.transfer('b', 'a')).toEqual(['app:account:b', 'app:account:a']);
    expect(await service.nested('sku-2')).toBe(true);
    expect(Reflect.getMetadata(CUSTOM_METADATA, service.deduct)).toBe('kept');
    expect(service.deduct.name).toBe('deduct');
    expect(app.get(LockService).strategyName).toBe('default');
    await app.close();
  });

  it('rejects keys that resolve to undefined, null or objects, without taking a lock', async () => {
    const app = await boot([DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() } })], [StockService]);
    const service = app.get(StockService);
    await expect(service.deduct(undefined as unknown as string, 1)).rejects.toBeInstanceOf(InvalidLockKeyError);
    await expect(service.deduct(null as unknown as string, 1)).rejects.toThrow(/resolved to null/);
    await expect(service.deduct({} as unknown as string, 1)).rejects.toThrow(/resolved to object/);
    await expect(service.place({} as { userId: string; orderId: number })).rejects.toThrow(/argument 0\.userId/);
    expect(service.calls).toEqual([]);
    await app.close();
  });

  it('forRootAsync with useFactory, inject and extraProviders', async () => {
    const memory = new InMemoryLockStrategy({ name: 'from-factory' });
    const app = await boot(
      [
        DistributedLockModule.forRootAsync({
          useFactory: (strategy: InMemoryLockStrategy): DistributedLockModuleOptions => ({ strategies: { default: strategy } }),
          inject: ['LOCK_BACKEND'],
          extraProviders: [{ provide: 'LOCK_BACKEND', useValue: memory }],
        }),
      ],
      [StockService],
    );
    expect(app.get(LockService).strategyName).toBe('default');
    expect((await app.get(StockService).deduct('x', 1)).key).toBe('stock:x');
    await app.close();
  });

  it('forRootAsync with useClass and with useExisting', async () => {
    @Injectable()
    class LockConfig implements DistributedLockOptionsFactory {
      createDistributedLockOptions(): DistributedLockModuleOptions {
        return { strategies: { default: new InMemoryLockStrategy({ name: 'from-class' }) } };
      }
    }
    const viaClass = await boot([DistributedLockModule.forRootAsync({ useClass: LockConfig })]);
    expect(viaClass.get(LockService).strategyName).toBe('default');
    await viaClass.close();

    @Module({ providers: [LockConfig], exports: [LockConfig] })
    class ConfigModule {}
    const viaExisting = await boot([DistributedLockModule.forRootAsync({ imports: [ConfigModule], useExisting: LockConfig })]);
    expect(viaExisting.get(LockService).strategyName).toBe('default');
    await viaExisting.close();
  });

  it('forFeature: two modules on two strategies, each with its own prefix, in one application', async () => {
    @Injectable()
    class OrdersService {
      constructor(readonly locks: LockService) {}
      @Locked('order:{0}')
      async take(id: string): Promise<string | undefined> {
        return currentLock()?.key;
      }
    }
    @Injectable()
    class CatalogService {
      constructor(
        readonly locks: LockService,
        @InjectLockService('fast') readonly named: LockService,
      ) {}
      @Locked('item:{0}')
      async edit(id: string): Promise<string | undefined> {
        return currentLock()?.key;
      }
    }
    @Module({ imports: [DistributedLockModule.forFeature({ strategy: 'durable', keyPrefix: 'orders:' })], providers: [OrdersService] })
    class OrdersModule {}
    @Module({ imports: [DistributedLockModule.forFeature({ strategy: 'fast', keyPrefix: 'catalog:' })], providers: [CatalogService] })
    class CatalogModule {}

    const durable = new InMemoryLockStrategy({ name: 'durable-memory' });
    const fast = new InMemoryLockStrategy({ name: 'fast-memory' });
    const acquiredOn: string[] = [];
    const app = await boot([
      DistributedLockModule.forRoot({ strategies: { default: durable, durable, fast } }),
      OrdersModule,
      CatalogModule,
    ]);
    const orders = app.get(OrdersService);
    const catalog = app.get(CatalogService);
    orders.locks.events.on('acquired', (event) => acquiredOn.push(`${event.strategy}:${event.key}`));
    catalog.locks.events.on('acquired', (event) => acquiredOn.push(`${event.strategy}:${event.key}`));
    expect(await orders.take('1')).toBe('orders:order:1');
    expect(await catalog.edit('2')).toBe('catalog:item:2');
    expect(acquiredOn).toEqual(['durable:orders:order:1', 'fast:catalog:item:2']);
    // Named as the application registered them, not by their kind or their own name.
    expect(orders.locks.strategyName).toBe('durable');
    expect(catalog.locks.strategyName).toBe('fast');
    expect(catalog.named.strategyName).toBe('fast');
    expect([orders.locks.backendName, catalog.locks.backendName]).toEqual(['durable-memory', 'fast-memory']);
    const held = await catalog.named.acquire('busy');
    const refused = await catalog.named.acquire('busy', { waitTimeout: 0 }).catch((error: unknown) => error);
    expect(String(refused)).toContain('"fast"');
    await held.release();
    await app.close();
  });

  it('fails at bootstrap, naming Class#method, when @Locked names an unknown strategy', async () => {
    @Injectable()
    class Misconfigured {
      @Locked('k', { strategy: 'nope' })
      async run(): Promise<void> {}
    }
    const error = await boot([DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() } })], [Misconfigured]).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StrategyNotRegisteredError);
    expect((error as Error).message).toContain('Misconfigured#run');
    expect((error as Error).message).toContain('"nope"');
  });

  it('fails at bootstrap on a malformed key template or option', async () => {
    @Injectable()
    class BadTemplate {
      @Locked('stock:{first}')
      async run(): Promise<void> {}
    }
    await expect(boot([DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() } })], [BadTemplate])).rejects.toThrow(
      /BadTemplate#run.*\{first\}/,
    );
    @Injectable()
    class BadOption {
      @Locked('k', { ttl: -5 })
      async run(): Promise<void> {}
    }
    await expect(boot([DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() } })], [BadOption])).rejects.toThrow(
      InvalidLockOptionsError,
    );
  });

  it.each([
    ['an empty key', ''],
    ['a key with a newline', 'stock\nlevel'],
    ['a 600-character key', 'x'.repeat(600)],
    ['a template with a newline in its fixed part', 'stock\n:{0}'],
    ['a key with a lone surrogate', 'stock:\uD800'],
  ])('fails at bootstrap, naming Class#method, on a @Locked key that can never be valid: %s', async (_what, key) => {
    @Injectable()
    class NeverValid {
      @Locked(key)
      async run(): Promise<void> {}
    }
    const error = await boot([DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() } })], [NeverValid]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidLockKeyError);
    expect((error as Error).message).toContain('NeverValid#run');
  });

  it('fails at bootstrap when a fixed @Locked key is too long with the module prefix', async () => {
    @Injectable()
    class TooLongWithPrefix {
      @Locked('k'.repeat(500))
      async run(): Promise<void> {}
    }
    const error = await boot([DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() }, keyPrefix: 'p'.repeat(20) })], [TooLongWithPrefix]).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InvalidLockKeyError);
    expect((error as Error).message).toContain('TooLongWithPrefix#run');
  });

  it('refuses @Locked on a controller with a message that says where to put it', async () => {
    @Controller()
    class LockedController {
      @Get()
      @Locked('k')
      async handle(): Promise<void> {}
    }
    const moduleRef = Test.createTestingModule({
      imports: [DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() } })],
      controllers: [LockedController],
    });
    const compiled = await moduleRef.compile();
    await expect(compiled.init()).rejects.toThrow(/LockedController#handle.*service/);
  });

  it('validates module options at creation', async () => {
    await expect(boot([DistributedLockModule.forRoot({ strategies: {} })])).rejects.toThrow(InvalidLockOptionsError);
    await expect(boot([DistributedLockModule.forRoot({ strategies: { default: {} as never } })])).rejects.toThrow(/strategies\.default/);
    // A defaultStrategy the application set, naming no registered strategy. (Several strategies and none
    // named "default" is no error by itself: no-default-strategy.spec.ts.)
    await expect(
      boot([DistributedLockModule.forRoot({ strategies: { a: new InMemoryLockStrategy(), b: new InMemoryLockStrategy() }, defaultStrategy: 'c' })]),
    ).rejects.toThrow(/defaultStrategy/);
    await expect(
      boot([DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() }, colour: 'blue' } as never)]),
    ).rejects.toThrow(/colour/);
    expect(() => DistributedLockModule.forFeature({ strategy: 'has space' })).toThrow(InvalidLockOptionsError);
    for (const instanceName of ['', 'pod:1', 'x'.repeat(65), 'pod name', 42]) {
      await expect(boot([DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() }, instanceName } as never)])).rejects.toThrow(/instanceName/);
    }
  });

  it('names the instance (instanceName) in the owner id of every lock, which query() reads back', async () => {
    const app = await boot([DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() }, instanceName: 'shop-7d9f4-x2k' })]);
    try {
      const locks = app.get(LockService);
      const lock = await locks.acquire('k');
      expect(lock.owner).toMatch(/:shop-7d9f4-x2k:[0-9a-f-]{36}$/);
      expect((await locks.query('k')).held[0].owner.instance).toBe('shop-7d9f4-x2k');
      await lock.release();
    } finally {
      await app.close();
    }
  });

  it('forRoot() and forRootAsync() with no argument throw InvalidLockOptionsError naming what to pass', () => {
    const call = DistributedLockModule as unknown as { forRoot(options?: unknown): unknown; forRootAsync(options?: unknown): unknown };
    expect(() => call.forRoot()).toThrow(InvalidLockOptionsError);
    expect(() => call.forRoot()).toThrow(/forRoot\(\{ strategies: \{ default:/);
    expect(() => call.forRoot(null)).toThrow(InvalidLockOptionsError);
    expect(() => call.forRootAsync()).toThrow(InvalidLockOptionsError);
    expect(() => call.forRootAsync()).toThrow(/useFactory/);
    expect(() => call.forRootAsync({ inject: [] })).toThrow(/useFactory, useClass or useExisting/);
  });

  it('@OptimisticVersion re-runs on a version conflict, then gives up with the conflict', async () => {
    const app = await boot([DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() } })], [RetryingService]);
    const service = app.get(RetryingService);
    expect(await service.update(2)).toBe(3);
    service.attempts = 0;
    await expect(service.update(10)).rejects.toBeInstanceOf(VersionConflictError);
    expect(service.attempts).toBe(4);
    await app.close();
  });

  it('releases held locks and closes strategies on shutdown', async () => {
    const memory = new InMemoryLockStrategy();
    const app = await boot([DistributedLockModule.forRoot({ strategies: { default: memory } })]);
    const locks = app.get(LockService);
    const lock = await locks.acquire('held-at-shutdown');
    await app.close();
    expect(lock.isHeld).toBe(false);
    await expect(memory.tryAcquire({ key: 'x', owner: 'o', ttlMs: 1000, mode: 'exclusive' })).rejects.toThrow(/closed/);
  });
});
