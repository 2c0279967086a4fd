import { Test } from '@nestjs/testing';
import { DistributedLockModule, InMemoryLockStrategy, LockAcquireTimeoutError, LockService } from 'nest-distributed-lock';
import { COUNTER_STORE, CounterService, type CounterStore } from './counter.service';

class MapCounterStore implements CounterStore {
  private readonly values = new Map<string, number>();
  async read(name: string): Promise<number> {
    return this.values.get(name) ?? 0;
  }
  async write(name: string, value: number): Promise<void> {
    this.values.set(name, value);
  }
}

async function setUp(store: CounterStore) {
  const moduleRef = await Test.createTestingModule({
    imports: [
      DistributedLockModule.forRoot({
        strategies: { default: new InMemoryLockStrategy(), orders: new InMemoryLockStrategy(), ledger: new InMemoryLockStrategy(), named: new InMemoryLockStrategy() },
      }),
    ],
    providers: [CounterService, { provide: COUNTER_STORE, useValue: store }],
  }).compile();
  await moduleRef.init();
  return moduleRef;
}

describe('CounterService under @Locked', () => {
  it('loses no increment when 50 calls run at once', async () => {
    const store = new MapCounterStore();
    const moduleRef = await setUp(store);
    const counter = moduleRef.get(CounterService);
    await Promise.all(Array.from({ length: 50 }, () => counter.increment('a')));
    expect(await store.read('a')).toBe(50);
    await moduleRef.close();
  });

  it('loses increments without the lock (the check can fail)', async () => {
    const store = new MapCounterStore();
    const moduleRef = await setUp(store);
    const counter = moduleRef.get(CounterService);
    await Promise.all(Array.from({ length: 50 }, () => counter.incrementUnlocked('a')));
    expect(await store.read('a')).toBeLessThan(50);
    await moduleRef.close();
  });

  it("throws the library's own error classes: one copy of the module in the app", async () => {
    const moduleRef = await setUp(new MapCounterStore());
    const locks = moduleRef.get(LockService);
    const held = await locks.acquire('counter:b');
    await expect(locks.acquire('counter:b', { waitTimeout: 0 })).rejects.toBeInstanceOf(LockAcquireTimeoutError);
    await held.release();
    await moduleRef.close();
  });
});
