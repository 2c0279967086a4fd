import 'reflect-metadata';
import { Injectable, Logger } from '@nestjs/common';
import { ScheduleModule, Timeout } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { InvalidLockOptionsError } from '../errors/invalid-lock-options.error';
import { LockService } from '../locking/lock-service';
import { InMemoryLockStrategy } from '../strategies/in-memory/in-memory-lock.strategy';
import { ScheduledLock } from './decorators/scheduled-lock.decorator';
import { DistributedLockModule } from './distributed-lock.module';
import { keysForLog } from './log-keys';

describe('logKeys', () => {
  afterEach(() => vi.restoreAllMocks());

  it('hashes every occurrence of the key, the same way each time', () => {
    const line = keysForLog('Lock "user:alice@example.com" lost: could not extend "user:alice@example.com"', 'user:alice@example.com', 'hashed');
    expect(line).not.toContain('alice');
    expect(line).toMatch(/^Lock "key#[0-9a-f]{16}" lost: could not extend "key#[0-9a-f]{16}"$/);
    expect(new Set(line.match(/key#[0-9a-f]{16}/g)).size).toBe(1);
    expect(keysForLog('Lock "k" lost', 'k', 'plain')).toBe('Lock "k" lost');
  });

  it("keeps keys out of the module's log lines with 'hashed'", async () => {
    const warnings: string[] = [];
    vi.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
    const strategy = new InMemoryLockStrategy();
    const app = await Test.createTestingModule({ imports: [DistributedLockModule.forRoot({ strategies: { default: strategy }, keyPrefix: 'shop:', logKeys: 'hashed' })] }).compile();
    await app.init();
    try {
      const lock = await app.get(LockService).acquire('order:alice@example.com', { ttl: 5_000 });
      strategy.forceRelease('shop:order:alice@example.com');
      await vi.waitFor(() => expect(warnings).toHaveLength(1));
      expect(warnings[0]).toMatch(/^Lock "key#[0-9a-f]{16}" \(strategy "default"\) lost/);
      expect(lock.isHeld).toBe(false);
    } finally {
      await app.close();
    }
  });

  it("keeps keys out of what @nestjs/schedule logs of a job's LockLostError with 'hashed'", async () => {
    @Injectable()
    class Jobs {
      @Timeout(10)
      @ScheduledLock({ name: 'report:alice@example.com', lockAtMostFor: 300 })
      async outlivesItsLock(): Promise<void> {
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    const logged: unknown[] = [];
    vi.spyOn(Logger.prototype, 'error').mockImplementation((message: unknown) => void logged.push(message));
    const app = await Test.createTestingModule({
      imports: [ScheduleModule.forRoot(), DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() }, keyPrefix: 'shop:', logKeys: 'hashed', logEvents: false })],
      providers: [Jobs],
    }).compile();
    await app.init();
    try {
      await vi.waitFor(() => expect(logged).toHaveLength(1), { timeout: 3_000 });
      const error = logged[0] as Error;
      expect(error.name).toBe('LockLostError');
      expect(`${error.message}\n${error.stack}`).not.toContain('alice');
      expect(error.message).toMatch(/key#[0-9a-f]{16}/);
      // The error still says which lock, to code that reads it.
      expect((error as unknown as { key: string }).key).toBe('shop:report:alice@example.com');
    } finally {
      await app.close();
    }
  });

  it('refuses an unknown mode when the module is created', async () => {
    const module = DistributedLockModule.forRoot({ strategies: { default: new InMemoryLockStrategy() }, logKeys: 'none' as 'plain' });
    await expect(Test.createTestingModule({ imports: [module] }).compile()).rejects.toBeInstanceOf(InvalidLockOptionsError);
  });
});
